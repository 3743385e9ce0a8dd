// valet bench-trim: what onTrimMemory's advice on the weights frees and what
// the next step costs: resident file-backed and anonymous bytes, and the
// time of a decode step, before and after LlamaModel::AdviseWeights.
#include <chrono>
#include <cstdio>

#include "cli_args.h"
#include "commands.h"
#include "common/proc_status.h"
#include "engine/engine.h"

namespace valet::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"--model", "-m", true, "GGUF model file (required)"},
    {"--weights-cache", nullptr, true, kWeightsCacheHelp},
    {"--threads", "-t", true, "compute threads (default: all cores)"},
};

// One decode step of `seq` (a token after what it holds); seconds.
double DecodeStep(Engine& e, KvSequence& seq, int32_t token) {
  const int32_t tokens[] = {token};
  BatchItem item{&seq, tokens, LogitsMode::kLast};
  std::vector<float> logits;
  const auto t0 = std::chrono::steady_clock::now();
  (void)e.context().Forward({&item, 1}, logits).ok();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void PrintMemory(const char* when) {
  std::printf("%-28s resident file-backed %8.1f MiB, anonymous %8.1f MiB\n", when, ProcStatusBytes("RssFile") / 1048576.0,
              ProcStatusBytes("RssAnon") / 1048576.0);
}

}  // namespace

int RunBenchTrim(std::span<char* const> argv) {
  Args args;
  if (auto code = ParseCommandLine("bench-trim", "-m MODEL [--weights-cache DIR] [-t N]", kFlags, argv, &args)) {
    return *code;
  }
  EngineOptions o;
  Result<std::string> model = args.String("--model", std::nullopt);
  Result<std::string> cache = WeightsCachePath(args);
  Result<int64_t> threads = args.Int("--threads", ThreadPool::DefaultThreadCount(), 1, 256);
  for (const Status& s : {model.status(), cache.status(), threads.status()}) {
    if (!s.ok()) return Fail("bench-trim", s);
  }
  o.model_path = *model;
  o.weights_cache.path = *cache;
  o.n_threads = static_cast<int>(*threads);
  o.kv_capacity_bytes = 64u << 20;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(o);
  if (!engine.ok()) return Fail("bench-trim", engine.status());
  Engine& e = **engine;
  KvSequence seq(e.kv_pool());
  int32_t token = 1;
  for (int i = 0; i < 3; ++i) DecodeStep(e, seq, token++);  // every weight page touched
  const double warm = DecodeStep(e, seq, token++);
  PrintMemory("after warm steps:");
  for (WeightsAdvice advice : {WeightsAdvice::kCold, WeightsAdvice::kPageOut}) {
    const size_t advised = e.model().AdviseWeights(advice);
    const char* name = advice == WeightsAdvice::kCold ? "MADV_COLD" : "MADV_PAGEOUT";
    char when[64];
    std::snprintf(when, sizeof(when), "after %s (%.0f MiB):", name, advised / 1048576.0);
    PrintMemory(when);
    const double next = DecodeStep(e, seq, token++);
    const double then = DecodeStep(e, seq, token++);
    std::printf("decode step: warm %.1f ms, the next after %s %.1f ms, the one after %.1f ms\n", warm * 1e3, name,
                next * 1e3, then * 1e3);
  }
  return 0;
}

}  // namespace valet::cli
