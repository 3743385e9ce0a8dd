// valet bench-contention / valet demo: the "chat under indexing" scenario on
// one engine, one model and one seed, arm by arm (idle, fifo, batch,
// priority, valet), with a Markdown table, JSON and an SVG timeline.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli_args.h"
#include "commands.h"
#include "common/private_dir.h"
#include "common/private_files.h"
#include "engine/real_engine.h"
#include "load_average.h"
#include "testing/bench/cold_start.h"
#include "testing/bench/contention_report.h"
#include "testing/bench/contention_runner.h"
#include "testing/bench/contention_scenario.h"
#include "testing/bench/svg_timeline.h"
#include "testing/model/synthetic_model.h"

namespace valet::cli {
using namespace valet::testing;
namespace {

namespace fs = std::filesystem;

constexpr FlagSpec kFlags[] = {
    {"--model", "-m", true, "GGUF model (default: the built-in bench model, synthesized on first use)"},
    {"--arms", nullptr, true, "comma-separated arms: idle,fifo,batch,priority,valet (default all)"},
    {"--turns", "-n", true, "chat turns per arm"},
    {"--slow-listener", nullptr, true, "MS: every background task's listener takes this long per token (an app's slow consumer)"},
    {"--block", nullptr, true, "turns per interleaved block (default 6)"},
    {"--seed", nullptr, true, "workload seed (default 1)"},
    {"--json", nullptr, true, "write the report as JSON to this file"},
    {"--svg", nullptr, true, "write the SVG timeline to this file"},
    {"--md", nullptr, true, "write the Markdown table to this file"},
    {"--threads", "-t", true, "compute threads (default: all cores)"},
    {"--kv-pool-tokens", nullptr, true, "KV pool size in tokens (default 1024: a document and a summary do not fit together)"},
    {"--snapshot-ram-tokens", nullptr, true, "snapshot store's RAM tier, in tokens of this model's KV (default 640: a document's own KV up to ~640 tokens)"},
    {"--snapshot-disk-tokens", nullptr, true, "snapshot store's disk tier, likewise (default 768; what fits neither is evicted)"},
    {"--bg-chunk", nullptr, true, "valet: override the prefill chunk of non-chat tiers while RESUMED/STARTED (default: the shipped budgets)"},
    {"--think-min", nullptr, true, "shortest think time before a chat turn, seconds"},
    {"--think-max", nullptr, true, "longest think time, seconds"},
    {"--background-s", nullptr, true, "how long the app stays in the background at each excursion (seconds)"},
    {"--returns", nullptr, true, "go to the background before this many chat turns, spread over the run, and report those return turns apart (default 0: once, midway)"},
    {"--hide-trim", nullptr, true, "onTrimMemory level sent after ON_STOP (default 20 UI_HIDDEN with --returns, else none; 0: none)"},
    {"--deep-trim", nullptr, true, "a deeper onTrimMemory level sent halfway through each stay in the background (e.g. 40, 80; default 0: none)"},
    {"--cold-start", nullptr, true, "instead of the arms: N interleaved cold starts, empty durable directory vs three recovered durable tasks"},
    {"--no-fill", nullptr, false, "valet: no lower-tier riders in chat decode steps"},
};

// The user's cache directory; without XDG_CACHE_HOME or HOME there is none
// (a fixed name in the shared temporary directory could be planted).
std::string CacheDir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') return std::string(x) + "/valet";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return std::string(h) + "/.cache/valet";
  return "";
}

}  // namespace

Result<std::string> DefaultBenchModel(const std::string& scratch) {
  const std::string dir = CacheDir().empty() ? scratch : CacheDir();
  const std::string path = dir + "/valet-bench-q8_0.gguf";
  if (fs::exists(path)) return path;
  VALET_RETURN_IF_ERROR(PrivateDir::Open(dir).status());
  std::fprintf(stderr, "synthesizing the built-in bench model into %s ...\n", path.c_str());
  SynthModelOptions o;
  o.preset = SynthPreset::kBench;
  o.type = GgmlType::kQ8_0;
  VALET_RETURN_IF_ERROR(WriteSyntheticModel(o, path));
  return path;
}

namespace {

struct Flags {
  std::string model;
  std::vector<Arm> arms;
  ScenarioConfig config;
  std::string json, svg, md;
  int threads = 0;
  int64_t pool_tokens = 1024;
  // The snapshot tiers, like the pool, in tokens of the model's KV: the same
  // scenario on every model (5 and 6 MiB on the bench model, 70 and 84 MiB
  // on the 3b-shape one).
  int64_t snapshot_ram_tokens = 640;
  int64_t snapshot_disk_tokens = 768;
  int64_t cold_start = 0;  // > 0: the cold-start measurement instead of the arms
};

Result<Flags> ReadFlags(const Args& a, const ContentionDefaults& d, const std::string& scratch) {
  Flags f;
  if (a.Has("--model")) {
    VALET_ASSIGN_OR_RETURN(f.model, a.String("--model", std::nullopt));
  } else {
    VALET_ASSIGN_OR_RETURN(f.model, DefaultBenchModel(scratch));
  }
  VALET_ASSIGN_OR_RETURN(std::string arms, a.String("--arms", "idle,fifo,batch,priority,valet"));
  VALET_ASSIGN_OR_RETURN(f.arms, ParseArms(arms));
  ScenarioConfig& c = f.config;
  VALET_ASSIGN_OR_RETURN(c.turns, a.Int("--turns", d.turns, 1, 10000));
  VALET_ASSIGN_OR_RETURN(c.block_turns, a.Int("--block", c.block_turns, 1, 10000));
  VALET_ASSIGN_OR_RETURN(int64_t seed, a.Int("--seed", 1, 0, INT64_MAX));
  c.seed = static_cast<uint64_t>(seed);
  VALET_ASSIGN_OR_RETURN(c.valet_bg_chunk, a.Int("--bg-chunk", c.valet_bg_chunk, 0, 4096));
  VALET_ASSIGN_OR_RETURN(c.think_min_s, a.Double("--think-min", d.think_min_s, 0.0, 3600.0));
  VALET_ASSIGN_OR_RETURN(c.think_max_s, a.Double("--think-max", std::max(c.think_min_s, d.think_max_s), c.think_min_s, 3600.0));
  VALET_ASSIGN_OR_RETURN(c.background_s, a.Double("--background-s", d.background_s, 0.0, 3600.0));
  VALET_ASSIGN_OR_RETURN(c.returns, a.Int("--returns", c.returns, 0, 10000));
  VALET_ASSIGN_OR_RETURN(c.hide_trim_level, a.Int("--hide-trim", c.hide_trim_level, 0, 80));
  VALET_ASSIGN_OR_RETURN(c.deep_trim_level, a.Int("--deep-trim", c.deep_trim_level, 0, 80));
  for (int32_t level : {c.hide_trim_level, c.deep_trim_level}) {
    if (level > 0) VALET_RETURN_IF_ERROR(TrimLevelFromInt(level).status());
  }
  VALET_ASSIGN_OR_RETURN(f.cold_start, a.Int("--cold-start", 0, 0, 10000));
  c.valet_fill = !a.Has("--no-fill");
  VALET_ASSIGN_OR_RETURN(double slow_ms, a.Double("--slow-listener", 0.0, 0.0, 60000.0));
  c.slow_listener_s = slow_ms / 1000.0;
  c = Resolve(c);
  VALET_ASSIGN_OR_RETURN(f.json, a.String("--json", d.json));
  VALET_ASSIGN_OR_RETURN(f.svg, a.String("--svg", d.svg));
  VALET_ASSIGN_OR_RETURN(f.md, a.String("--md", ""));
  VALET_ASSIGN_OR_RETURN(f.threads, a.Int("--threads", ThreadPool::DefaultThreadCount(), 1, 256));
  VALET_ASSIGN_OR_RETURN(f.pool_tokens, a.Int("--kv-pool-tokens", f.pool_tokens, 64, 1 << 22));
  VALET_ASSIGN_OR_RETURN(f.snapshot_ram_tokens, a.Int("--snapshot-ram-tokens", f.snapshot_ram_tokens, 0, 1 << 22));
  VALET_ASSIGN_OR_RETURN(f.snapshot_disk_tokens, a.Int("--snapshot-disk-tokens", f.snapshot_disk_tokens, 0, 1 << 22));
  return f;
}

// The pool and the snapshot tiers in bytes of this model's KV, in the engine's KV type.
struct KvSizes {
  size_t pool = 0;
  size_t snapshot_ram = 0;
  size_t snapshot_disk = 0;
};

RealEngineOptions EngineOptions(const Flags& f, const std::string& snapshot_dir, const KvSizes& sizes) {
  RealEngineOptions o;
  o.engine.model_path = f.model;
  o.engine.n_threads = f.threads;
  o.engine.kv_capacity_bytes = sizes.pool;
  o.store.disk_dir = snapshot_dir;
  // Phone-sized: parked documents spill from RAM to disk, and past the disk
  // budget the cost model evicts.
  o.store.ram_budget_bytes = sizes.snapshot_ram;
  o.store.disk_budget_bytes = sizes.snapshot_disk;
  o.store.warn = [](std::string_view) {};  // fallbacks are counted in the report
  return o;
}

Result<KvSizes> MeasureKvSizes(const Flags& f, const std::string& snapshot_dir) {
  // Only reserved (kv/kv_pool.cpp), so generous: a 3B model's block alone is 1.8 MB.
  RealEngineOptions o = EngineOptions(f, snapshot_dir, KvSizes{size_t{1} << 30, 0, 0});
  o.calibrate = false;
  VALET_ASSIGN_OR_RETURN(std::unique_ptr<RealEngine> probe, RealEngine::Open(o));
  const auto bytes = [&](int64_t tokens) { return tokens == 0 ? 0 : probe->KvBytesFor(static_cast<int32_t>(tokens)); };
  return KvSizes{bytes(f.pool_tokens), bytes(f.snapshot_ram_tokens), bytes(f.snapshot_disk_tokens)};
}

Result<std::unique_ptr<RealEngine>> OpenEngine(const Flags& f, const std::string& snapshot_dir, KvSizes* sizes) {
  VALET_ASSIGN_OR_RETURN(*sizes, MeasureKvSizes(f, snapshot_dir));
  return RealEngine::Open(EngineOptions(f, snapshot_dir, *sizes));
}

Status WriteFile(const std::string& path, const std::string& text) {
  if (path.empty()) return Status::Ok();
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return IoError("cannot write " + path);
  return Status::Ok();
}

Result<ContentionReport> Run(const Flags& f, RealEngine& engine, size_t pool_bytes, std::vector<ArmRun>* runs) {
  VALET_ASSIGN_OR_RETURN(Workload workload, BuildWorkload(f.config, engine));
  EngineProbe probe;
  probe.park_seconds = [&engine] { return engine.accounting().park_seconds; };
  probe.resume_seconds = [&engine] { return engine.accounting().resume_seconds; };
  const std::string load_before = LoadAverage();
  VALET_ASSIGN_OR_RETURN(
      InterleavedRuns interleaved,
      RunInterleaved(
          f.config, workload, f.arms,
          [&](Arm arm, const Workload& block, const ScenarioConfig& c) {
            return RunArmRealTime(engine, block, c, arm, probe);
          },
          [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }));
  ContentionReport report = ReportFrom(f.config, f.arms, interleaved);
  report.model = f.model;
  report.machine = load_before + "; after: " + LoadAverage();
  report.threads = f.threads;
  report.kv_pool_bytes = pool_bytes;
  // The timeline draws each arm's first block.
  for (std::vector<ArmRun>& blocks : interleaved.blocks) {
    if (!blocks.empty()) runs->push_back(std::move(blocks.front()));
  }
  return report;
}

// --cold-start N: whole starts, empty durable directory vs three unfinished
// durable tasks to recover (testing/bench/cold_start.h).
int RunColdStartMode(const char* command, const Flags& f, const std::string& scratch) {
  Result<KvSizes> sizes = MeasureKvSizes(f, scratch);
  if (!sizes.ok()) return Fail(command, sizes.status());
  ColdStartOptions o;
  o.repetitions = static_cast<int32_t>(f.cold_start);
  o.open_engine = [&f, sizes = *sizes](const std::string& snapshot_dir) {
    return RealEngine::Open(EngineOptions(f, snapshot_dir, sizes));
  };
  o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  Result<ColdStartReport> report = [&]() -> Result<ColdStartReport> {
    RealEngineOptions e = EngineOptions(f, scratch, *sizes);
    e.calibrate = false;
    VALET_ASSIGN_OR_RETURN(std::unique_ptr<RealEngine> tokenizer, RealEngine::Open(e));
    VALET_ASSIGN_OR_RETURN(Workload workload, BuildWorkload(f.config, *tokenizer));
    tokenizer.reset();
    const std::string load_before = LoadAverage();
    VALET_ASSIGN_OR_RETURN(ColdStartReport r, RunColdStart(workload, f.config, o));
    r.machine = load_before + "; after: " + LoadAverage();
    return r;
  }();
  if (!report.ok()) return Fail(command, report.status());
  report->model = f.model;
  report->threads = f.threads;
  const std::string md = ColdStartMarkdown(*report);
  std::printf("\n%s\nmodel %s | %d threads | KV pool %.1f MiB (%lld tokens) | %s\n", md.c_str(), f.model.c_str(),
              f.threads, sizes->pool / 1048576.0, static_cast<long long>(f.pool_tokens), report->machine.c_str());
  for (const auto& [path, text] : {std::pair{f.json, ColdStartJson(*report)}, {f.md, md}}) {
    if (Status s = WriteFile(path, text); !s.ok()) return Fail(command, s);
  }
  if (!f.json.empty()) std::printf("json: %s\n", f.json.c_str());
  return 0;
}

}  // namespace

int RunContention(const char* command, std::span<char* const> argv, const ContentionDefaults& defaults) {
  Args args;
  if (auto code = ParseCommandLine(command, "[-m MODEL] [--arms LIST] [--turns N] [flags]", kFlags, argv, &args)) return *code;
  Result<std::string> scratch = MakeScratchDirectory("valet-contention-");
  if (!scratch.ok()) return Fail(command, scratch.status());
  const fs::path tmp = *scratch;
  std::error_code ec;
  Result<Flags> flags = ReadFlags(args, defaults, tmp.string());
  if (!flags.ok()) {
    fs::remove_all(tmp, ec);
    return Fail(command, flags.status());
  }
  if (flags->cold_start > 0) {
    const int code = RunColdStartMode(command, *flags, tmp.string());
    fs::remove_all(tmp, ec);
    return code;
  }
  KvSizes sizes;
  Result<std::unique_ptr<RealEngine>> engine = OpenEngine(*flags, tmp.string(), &sizes);
  if (!engine.ok()) {
    fs::remove_all(tmp, ec);
    return Fail(command, engine.status());
  }
  std::vector<ArmRun> runs;
  Result<ContentionReport> report = Run(*flags, **engine, sizes.pool, &runs);
  engine->reset();
  fs::remove_all(tmp, ec);
  if (!report.ok()) return Fail(command, report.status());
  const std::string md = ReportMarkdown(*report);
  std::printf("\n%s\n", md.c_str());
  std::printf("model %s | %d threads | KV pool %.1f MiB (%lld tokens) | snapshots RAM %.1f MiB (%lld tokens), disk "
              "%.1f MiB (%lld tokens) | seed %llu | %s\n",
              flags->model.c_str(), flags->threads, sizes.pool / 1048576.0, static_cast<long long>(flags->pool_tokens),
              sizes.snapshot_ram / 1048576.0, static_cast<long long>(flags->snapshot_ram_tokens),
              sizes.snapshot_disk / 1048576.0, static_cast<long long>(flags->snapshot_disk_tokens),
              static_cast<unsigned long long>(flags->config.seed), report->machine.c_str());
  if (defaults.seed_comparison) std::printf("\nThe seed's phone figures beside ours:\n%s", SeedComparison(*report).c_str());
  for (const auto& [path, text] : {std::pair{flags->json, ReportJson(*report)}, {flags->md, md},
                                   {flags->svg, RenderTimelineSvg(runs)}}) {
    if (Status s = WriteFile(path, text); !s.ok()) return Fail(command, s);
  }
  if (!flags->svg.empty()) std::printf("\ntimeline: %s\n", flags->svg.c_str());
  if (!flags->json.empty()) std::printf("json: %s\n", flags->json.c_str());
  for (const ArmSummary& s : report->arms) {
    if (s.cancelled != 0 || s.failed != 0 || s.unfinished != 0 || s.output_mismatches != 0 || !s.error.empty()) {
      return 1;
    }
  }
  return 0;
}

int RunBenchContention(std::span<char* const> argv) { return RunContention("bench-contention", argv, {}); }

}  // namespace valet::cli
