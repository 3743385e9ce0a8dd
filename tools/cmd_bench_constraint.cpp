// valet bench-constraint: decode throughput under an output constraint
// against the same generation unconstrained, in interleaved runs (medians).
// The constrained run pays for its masks (computed before each forward
// pass) and its compile, once per run (the token trie included).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli_args.h"
#include "commands.h"
#include "median.h"
#include "common/json.h"
#include "constraint_flags.h"
#include "engine/generator.h"

namespace valet::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"--model", "-m", true, "GGUF model file (required)"},
    {"--threads", "-t", true, "compute threads (default: all cores)"},
    {"--prompt", "-p", true, "prompt (default \"Answer in JSON:\")"},
    {"--n-predict", "-n", true, "tokens to generate at most (default 128)"},
    {"--runs", "-r", true, "runs of each arm, interleaved (default 5)"},
    VALET_CONSTRAINT_FLAGS,
    {"--json", nullptr, false, "print one JSON object"},
};

struct Arm {
  std::vector<double> tok_s;
  std::vector<double> tokens;
  std::vector<double> constraint_share;  // of the decode time
};

// Pure sampling at temperature 1: the constraint, not the model, decides
// how much of the vocabulary each step may take.
GenerateOptions Options(int32_t max_tokens, uint64_t seed, const Constraint& constraint) {
  GenerateOptions o;
  o.max_tokens = max_tokens;
  o.sampling.temperature = 1.0f;
  o.sampling.top_k = 0;
  o.sampling.top_p = 1.0f;
  o.sampling.min_p = 0.0f;
  o.sampling.seed = seed;
  o.constraint = constraint;
  return o;
}

Status RunArm(Engine& engine, const std::string& prompt, const GenerateOptions& o, Arm& arm) {
  const auto t0 = std::chrono::steady_clock::now();
  VALET_ASSIGN_OR_RETURN(Generation g, Generate(engine, prompt, o, nullptr));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // From the call to the last token, less the prompt's prefill: compile and masks count.
  const double decode = wall - g.prefill_seconds;
  arm.tok_s.push_back(decode > 0 ? static_cast<double>(g.tokens.size()) / decode : 0.0);
  arm.tokens.push_back(static_cast<double>(g.tokens.size()));
  arm.constraint_share.push_back(decode > 0 ? g.constraint_seconds / decode : 0.0);
  return Status::Ok();
}

}  // namespace

int RunBenchConstraint(std::span<char* const> argv) {
  Args args;
  if (auto code = ParseCommandLine("bench-constraint", "-m MODEL --json-schema FILE [flags]",
                                   kFlags, argv, &args)) {
    return *code;
  }
  EngineOptions eo;
  Result<std::string> path = args.String("--model", std::nullopt);
  Result<int64_t> threads = args.Int("--threads", ThreadPool::DefaultThreadCount(), 1, 256);
  Result<std::string> prompt = args.String("--prompt", "Answer in JSON:");
  Result<int64_t> n = args.Int("--n-predict", 128, 1, 1 << 16);
  Result<int64_t> runs = args.Int("--runs", 5, 1, 1000);
  Result<Constraint> constraint = ReadConstraintFlags(args);
  for (const Status* s : {&path.status(), &threads.status(), &prompt.status(), &n.status(),
                          &runs.status(), &constraint.status()}) {
    if (!s->ok()) return Fail("bench-constraint", *s);
  }
  if (!constraint->active()) {
    return Fail(
        "bench-constraint",
        InvalidArgument("give a constraint (--json-schema, --json-object, --grammar, --regex)"));
  }
  eo.model_path = *path;
  eo.n_threads = static_cast<int>(*threads);
  Result<std::unique_ptr<Engine>> engine = Engine::Open(eo);
  if (!engine.ok()) return Fail("bench-constraint", engine.status());
  Arm free_arm, constrained_arm;
  for (int64_t r = 0; r < *runs; ++r) {
    const auto seed = static_cast<uint64_t>(r + 1);
    Status s = RunArm(**engine, *prompt, Options(static_cast<int32_t>(*n), seed, {}), free_arm);
    if (s.ok())
      s = RunArm(**engine, *prompt, Options(static_cast<int32_t>(*n), seed, *constraint),
                 constrained_arm);
    if (!s.ok()) return Fail("bench-constraint", s);
  }
  const double free_tok_s = Median(free_arm.tok_s),
               constrained_tok_s = Median(constrained_arm.tok_s);
  const double ratio = free_tok_s > 0 ? constrained_tok_s / free_tok_s : 0.0;
  if (args.Has("--json")) {
    const Json out{{"free_tok_s", free_tok_s},
                   {"constrained_tok_s", constrained_tok_s},
                   {"ratio", ratio},
                   {"free_tokens", Median(free_arm.tokens)},
                   {"constrained_tokens", Median(constrained_arm.tokens)},
                   {"constraint", ConstraintKindName(constraint->kind)},
                   {"constraint_share", Median(constrained_arm.constraint_share)},
                   {"threads", eo.n_threads},
                   {"runs", *runs},
                   {"model", eo.model_path}};
    std::printf("%s\n", DumpJson(out).c_str());
  } else {
    std::printf("decode, medians of %lld interleaved runs (%d threads):\n",
                static_cast<long long>(*runs), eo.n_threads);
    std::printf("  free         %8.2f tok/s  (%.0f tokens)\n", free_tok_s, Median(free_arm.tokens));
    std::printf("  %-12s %8.2f tok/s  (%.0f tokens)\n", ConstraintKindName(constraint->kind),
                constrained_tok_s, Median(constrained_arm.tokens));
    std::printf(
        "  constrained / free: %.3f; the constraint's share of the constrained decode: %.2f%%\n",
        ratio, 100.0 * Median(constrained_arm.constraint_share));
  }
  return 0;
}

}  // namespace valet::cli
