// valet bench-engine: prefill and decode throughput in the pp512/tg128 form of
// llama-bench (random tokens, empty cache, median of several runs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>

#include "cli_args.h"
#include "commands.h"
#include "median.h"
#include "common/json.h"
#include "engine/engine.h"
#include "kernels/int8_peak.h"
#include "kernels/kernel_table.h"
#include "process_memory.h"

namespace valet::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"--model", "-m", true, "GGUF model file (required)"},
    {"--threads", "-t", true, "compute threads (default: all cores)"},
    {"--n-prompt", "-p", true, "prompt tokens for the prefill test (default 512)"},
    {"--n-gen", "-n", true, "tokens for the decode test (default 128)"},
    {"--reps", "-r", true, "measured runs per test, after one warm-up (default 5)"},
    {"--kv-type", nullptr, true, kKvTypeHelp},
    {"--weights-cache", nullptr, true, kWeightsCacheHelp},
    {"--json", nullptr, false, "print one JSON object"},
};

using Clock = std::chrono::steady_clock;

// Seconds to prefill `tokens` into an empty sequence, one step per batch limit.
Result<double> TimePrefill(Engine& e, const std::vector<int32_t>& tokens) {
  KvSequence seq(e.kv_pool());
  std::vector<float> logits;
  const size_t chunk = static_cast<size_t>(e.context().options().max_batch_tokens);
  const auto t0 = Clock::now();
  for (size_t i = 0; i < tokens.size(); i += chunk) {
    const size_t n = std::min(chunk, tokens.size() - i);
    BatchItem item{&seq, std::span<const int32_t>(tokens).subspan(i, n),
                   i + n == tokens.size() ? LogitsMode::kLast : LogitsMode::kNone};
    VALET_RETURN_IF_ERROR(e.context().Forward({&item, 1}, logits));
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Seconds to decode `tokens` one at a time from an empty sequence.
Result<double> TimeDecode(Engine& e, const std::vector<int32_t>& tokens) {
  KvSequence seq(e.kv_pool());
  std::vector<float> logits;
  const auto t0 = Clock::now();
  for (const int32_t& t : tokens) {
    BatchItem item{&seq, {&t, 1}, LogitsMode::kLast};
    VALET_RETURN_IF_ERROR(e.context().Forward({&item, 1}, logits));
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct BenchResult {
  double pp_tok_s = 0, tg_tok_s = 0;
};

Result<BenchResult> Bench(Engine& e, int64_t n_prompt, int64_t n_gen, int64_t reps) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> pick(0, e.model().config().n_vocab - 1);
  std::vector<int32_t> prompt(n_prompt), gen(n_gen);
  for (int32_t& t : prompt) t = pick(rng);
  for (int32_t& t : gen) t = pick(rng);
  std::vector<double> pp, tg;
  for (int64_t r = 0; r <= reps; ++r) {  // run 0 warms caches and page-ins the weights
    VALET_ASSIGN_OR_RETURN(double s_pp, TimePrefill(e, prompt));
    VALET_ASSIGN_OR_RETURN(double s_tg, TimeDecode(e, gen));
    if (r == 0) continue;
    pp.push_back(n_prompt / s_pp);
    tg.push_back(n_gen / s_tg);
  }
  return BenchResult{Median(pp), Median(tg)};
}

// Weights every prompt token multiplies: the layers' matrices. The output
// head runs for the last token of a prefill only, so it is left out.
int64_t MatmulParams(const LlamaModel& m) {
  int64_t n = 0;
  for (const LlamaLayer& l : m.layers()) {
    for (const WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) n += w->n_in * w->n_out;
  }
  return n;
}

// Prefill's int8 work rate against the peak of the table the engine runs.
struct PrefillRate {
  double gops = 0;                   // 2 x matmul params x tokens / second
  std::optional<Int8Peak> peak;      // nullopt for the scalar table
  double share() const { return peak ? gops / peak->gops_threads : -1.0; }
};

PrefillRate MeasurePrefillRate(const Engine& e, double pp_tok_s, int threads) {
  PrefillRate r;
  r.gops = 2.0 * static_cast<double>(MatmulParams(e.model())) * pp_tok_s / 1e9;
  r.peak = MeasureInt8Peak(ActiveKernels(), threads);
  return r;
}

Json PeakJson(const PrefillRate& r) {
  if (!r.peak) return nullptr;
  return {{"instruction", r.peak->instruction},
          {"gops_per_core", r.peak->gops_per_core},
          {"gops_threads", r.peak->gops_threads},
          {"prefill_share", r.share()}};
}

}  // namespace

int RunBenchEngine(std::span<char* const> argv) {
  Args args;
  if (auto code = ParseCommandLine("bench-engine", "-m MODEL [flags]", kFlags, argv, &args)) return *code;
  EngineOptions o;
  Result<std::string> path = args.String("--model", std::nullopt);
  Result<int64_t> threads = args.Int("--threads", ThreadPool::DefaultThreadCount(), 1, 256);
  Result<int64_t> n_prompt = args.Int("--n-prompt", 512, 1, 1 << 16);
  Result<int64_t> n_gen = args.Int("--n-gen", 128, 1, 1 << 16);
  Result<int64_t> reps = args.Int("--reps", 5, 1, 1000);
  Result<KvType> kv_type = args.KvTypeFlag();
  Result<std::string> cache = WeightsCachePath(args);
  for (const Status* s : {&path.status(), &threads.status(), &n_prompt.status(), &n_gen.status(), &reps.status(),
                          &kv_type.status(), &cache.status()}) {
    if (!s->ok()) return Fail("bench-engine", *s);
  }
  o.model_path = *path;
  o.n_threads = static_cast<int>(*threads);
  o.kv_type = *kv_type;
  o.n_ctx = static_cast<int32_t>(std::max(*n_prompt, *n_gen));
  o.weights_cache.path = *cache;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(o);
  if (!engine.ok()) return Fail("bench-engine", engine.status());
  ReportWeightsCache("bench-engine", (*engine)->model().load_report());
  Result<BenchResult> r = Bench(**engine, *n_prompt, *n_gen, *reps);
  if (!r.ok()) return Fail("bench-engine", r.status());
  const MemoryReport m = (*engine)->memory();
  const PrefillRate rate = MeasurePrefillRate(**engine, r->pp_tok_s, o.n_threads);
  const std::string pp_name = "pp" + std::to_string(*n_prompt), tg_name = "tg" + std::to_string(*n_gen);
  if (args.Has("--json")) {
    const Json out{{pp_name + "_tok_s", r->pp_tok_s},
                   {tg_name + "_tok_s", r->tg_tok_s},
                   {pp_name + "_gops", rate.gops},
                   {"int8_peak", PeakJson(rate)},
                   {"threads", o.n_threads},
                   {"model", o.model_path},
                   {"kernels", ActiveKernelsName()},
                   {"reps", *reps},
                   {"memory",
                    {{"weights_mapped_bytes", m.weights_mapped},
                     {"kv_pool_bytes", m.kv_pool},
                     {"scratch_bytes", m.scratch},
                     {"resident_bytes", ResidentBytes()}}}};
    std::printf("%s\n", DumpJson(out).c_str());
  } else {
    std::printf("model %s | %d threads | kernels %s | median of %lld runs\n", o.model_path.c_str(), o.n_threads,
                ActiveKernelsName(), static_cast<long long>(*reps));
    std::printf("%-8s %10.1f tok/s\n%-8s %10.1f tok/s\n", pp_name.c_str(), r->pp_tok_s, tg_name.c_str(), r->tg_tok_s);
    if (rate.peak) {
      std::printf("prefill  %10.1f GOP/s, %.1f%% of the %s int8 peak (%s, %d threads: %.1f GOP/s)\n", rate.gops,
                  100.0 * rate.share(), ActiveKernelsName(), rate.peak->instruction, o.n_threads,
                  rate.peak->gops_threads);
    }
    std::printf("memory: weights %.1f MiB mapped, KV pool %.1f MiB, scratch %.1f MiB, resident %.1f MiB\n",
                m.weights_mapped / 1048576.0, m.kv_pool / 1048576.0, m.scratch / 1048576.0,
                ResidentBytes() / 1048576.0);
  }
  return 0;
}

}  // namespace valet::cli
