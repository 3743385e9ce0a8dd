// valet bench-jank: missed UI frames while background inference runs, arm by
// arm (testing/bench/jank_bench.h), the arms interleaved run by run.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_args.h"
#include "commands.h"
#include "common/private_files.h"
#include "load_average.h"
#include "testing/bench/jank_bench.h"

namespace valet::cli {
using namespace valet::testing;
namespace {

constexpr FlagSpec kFlags[] = {
    {"--model", "-m", true,
     "GGUF model (default: the built-in bench model, synthesized on first use)"},
    {"--arms", nullptr, true, "comma-separated arms: idle,plain,valet (default all)"},
    {"--seconds", nullptr, true, "frames per arm and run, seconds (default 20)"},
    {"--runs", nullptr, true, "interleaved runs of every arm (default 1)"},
    {"--frame-work-ms", nullptr, true, "CPU time of each frame on each UI thread, ms (default 10)"},
    {"--ui-threads", nullptr, true,
     "threads that work on each frame at once: the UI thread, its RenderThread (default 2)"},
    {"--threads", "-t", true, "compute threads (default: all cores)"},
    {"--lanes", nullptr, true,
     "how background steps lower their priority: auto, switch, pool (default auto)"},
    {"--budgets", nullptr, true, "the valet arm's budget table, JSON (default: the shipped one)"},
    {"--json", nullptr, true, "write the report as JSON to this file"},
};

Result<std::vector<std::string>> SplitArms(const std::string& list) {
  std::vector<std::string> arms;
  std::stringstream in(list);
  for (std::string arm; std::getline(in, arm, ',');) arms.push_back(arm);
  VALET_RETURN_IF_ERROR(CheckJankArms(arms));
  if (arms.empty()) return InvalidArgument("--arms names no arm");
  return arms;
}

Result<PriorityMode> ParseLanes(const std::string& name) {
  if (name == "auto") return PriorityMode::kAuto;
  if (name == "switch") return PriorityMode::kSwitch;
  if (name == "pool") return PriorityMode::kPoolPerPriority;
  return InvalidArgument("--lanes must be auto, switch or pool");
}

std::string CpuName() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

Result<JankOptions> ReadOptions(const Args& a, const std::string& scratch, int64_t* runs,
                                std::string* json) {
  JankOptions o;
  if (a.Has("--model")) {
    VALET_ASSIGN_OR_RETURN(o.model_path, a.String("--model", std::nullopt));
  } else {
    VALET_ASSIGN_OR_RETURN(o.model_path, DefaultBenchModel(scratch));
  }
  VALET_ASSIGN_OR_RETURN(std::string arms, a.String("--arms", "idle,plain,valet"));
  VALET_ASSIGN_OR_RETURN(o.arms, SplitArms(arms));
  VALET_ASSIGN_OR_RETURN(o.seconds, a.Double("--seconds", o.seconds, 1.0, 3600.0));
  VALET_ASSIGN_OR_RETURN(*runs, a.Int("--runs", 1, 1, 1000));
  VALET_ASSIGN_OR_RETURN(o.frame_work_ms,
                         a.Double("--frame-work-ms", o.frame_work_ms, 0.0, o.frame_period_ms));
  VALET_ASSIGN_OR_RETURN(int64_t ui_threads, a.Int("--ui-threads", o.ui_threads, 1, 16));
  o.ui_threads = static_cast<int>(ui_threads);
  VALET_ASSIGN_OR_RETURN(int64_t threads, a.Int("--threads", 0, 0, 256));
  o.n_threads = static_cast<int>(threads);
  VALET_ASSIGN_OR_RETURN(std::string lanes, a.String("--lanes", "auto"));
  VALET_ASSIGN_OR_RETURN(o.priority_mode, ParseLanes(lanes));
  VALET_ASSIGN_OR_RETURN(o.budgets_path, a.String("--budgets", ""));
  VALET_ASSIGN_OR_RETURN(*json, a.String("--json", ""));
  return o;
}

}  // namespace

int RunBenchJank(std::span<char* const> argv) {
  constexpr const char* kCommand = "bench-jank";
  Args args;
  if (auto code =
          ParseCommandLine(kCommand, "[-m MODEL] [--arms LIST] [--seconds S] [--runs N] [flags]",
                           kFlags, argv, &args)) {
    return *code;
  }
  Result<std::string> scratch = MakeScratchDirectory("valet-jank-");
  if (!scratch.ok()) return Fail(kCommand, scratch.status());
  int64_t runs = 1;
  std::string json;
  Result<JankOptions> options = ReadOptions(args, *scratch, &runs, &json);
  std::vector<std::vector<JankSample>> samples(options.ok() ? options->arms.size() : 0);
  Status failed = options.status();
  const std::string load_before = LoadAverage();
  // Arm after arm within a run, a rotated order each run: a drift in the
  // machine's speed falls on every arm alike.
  for (int64_t r = 0; failed.ok() && r < runs; ++r) {
    for (size_t k = 0; failed.ok() && k < samples.size(); ++k) {
      const size_t i = (k + static_cast<size_t>(r)) % samples.size();
      std::fprintf(stderr, "run %lld/%lld: %s\n", static_cast<long long>(r + 1),
                   static_cast<long long>(runs), options->arms[i].c_str());
      Result<JankSample> s = RunJankArm(*options, options->arms[i]);
      if (s.ok()) samples[i].push_back(std::move(*s));
      failed = s.status();
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(*scratch, ec);
  if (!failed.ok()) return Fail(kCommand, failed);
  std::vector<JankArm> arms;
  for (size_t i = 0; i < samples.size(); ++i)
    arms.push_back(SummarizeJankArm(options->arms[i], samples[i]));
  std::printf("\n%s\nmodel %s | %s | %s; after: %s\n", JankMarkdown(arms, *options).c_str(),
              options->model_path.c_str(), CpuName().c_str(), load_before.c_str(),
              LoadAverage().c_str());
  if (!json.empty()) {
    std::ofstream out(json, std::ios::binary);
    out << JankJson(arms, *options);
    if (!out) return Fail(kCommand, IoError("cannot write " + json));
    std::printf("json: %s\n", json.c_str());
  }
  return 0;
}

}  // namespace valet::cli
