// valet generate: run a prompt through a model and stream the continuation.
#include <cstdio>

#include "cli_args.h"
#include "constraint_flags.h"
#include "commands.h"
#include "common/json.h"
#include "engine/generator.h"
#include "sched/chat_renderer.h"

namespace valet::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"--model", "-m", true, "GGUF model file (required)"},
    {"--prompt", "-p", true, "prompt text (required)"},
    {"--n-predict", "-n", true, "tokens to generate (default 128)"},
    {"--temp", nullptr, true, "temperature; 0 = greedy (default 0.8)"},
    {"--top-k", nullptr, true, "top-k, 0 = off (default 40)"},
    {"--top-p", nullptr, true, "top-p, 1 = off (default 0.95)"},
    {"--min-p", nullptr, true, "min-p, 0 = off (default 0.05)"},
    {"--repeat-penalty", nullptr, true, "repetition penalty, 1 = off (default 1.0)"},
    {"--seed", nullptr, true, "sampling seed"},
    {"--stop", nullptr, true, "stop string (repeatable)"},
    {"--threads", "-t", true, "compute threads (default: all cores)"},
    {"--ctx-size", "-c", true, "context size (default: the model's)"},
    {"--kv-type", nullptr, true, kKvTypeHelp},
    {"--weights-cache", nullptr, true, kWeightsCacheHelp},
    {"--chat", nullptr, false, "send the prompt as a user message through the model's chat template"},
    {"--system", nullptr, true, "with --chat: a system message before it"},
    VALET_CONSTRAINT_FLAGS,
    {"--json", nullptr, false, "print one JSON object instead of streaming text"},
    {"--top-logits", nullptr, true, "with --json: the top-K [token, logit] pairs of every step"},
};

struct Flags {
  EngineOptions engine;
  GenerateOptions gen;
  std::string prompt;
  bool chat = false;
  std::string system;
  bool json = false;
};

Result<Flags> ReadFlags(const Args& a) {
  Flags f;
  VALET_ASSIGN_OR_RETURN(f.engine.model_path, a.String("--model", std::nullopt));
  VALET_ASSIGN_OR_RETURN(f.prompt, a.String("--prompt", std::nullopt));
  VALET_ASSIGN_OR_RETURN(f.gen.max_tokens, a.Int("--n-predict", 128, 1, 1 << 20));
  SamplingParams& s = f.gen.sampling;
  VALET_ASSIGN_OR_RETURN(s.temperature, a.Double("--temp", 0.8, 0.0, 100.0));
  VALET_ASSIGN_OR_RETURN(s.top_k, a.Int("--top-k", 40, 0, 1 << 30));
  VALET_ASSIGN_OR_RETURN(s.top_p, a.Double("--top-p", 0.95, 0.0, 1.0));
  VALET_ASSIGN_OR_RETURN(s.min_p, a.Double("--min-p", 0.05, 0.0, 1.0));
  VALET_ASSIGN_OR_RETURN(s.repeat_penalty, a.Double("--repeat-penalty", 1.0, 1e-3, 100.0));
  VALET_ASSIGN_OR_RETURN(int64_t seed, a.Int("--seed", static_cast<int64_t>(kDefaultSamplingSeed & INT64_MAX), 0, INT64_MAX));
  s.seed = static_cast<uint64_t>(seed);
  f.gen.stop_strings = a.All("--stop");
  for (const std::string& stop : f.gen.stop_strings) {
    if (stop.empty()) return InvalidArgument("--stop must not be empty");
  }
  VALET_ASSIGN_OR_RETURN(f.engine.n_threads, a.Int("--threads", ThreadPool::DefaultThreadCount(), 1, 256));
  VALET_ASSIGN_OR_RETURN(f.engine.n_ctx, a.Int("--ctx-size", 0, 0, 1 << 20));
  VALET_ASSIGN_OR_RETURN(f.engine.weights_cache.path, WeightsCachePath(a));
  VALET_ASSIGN_OR_RETURN(f.engine.kv_type, a.KvTypeFlag());
  f.chat = a.Has("--chat");
  VALET_ASSIGN_OR_RETURN(f.system, a.String("--system", ""));
  if (!f.system.empty() && !f.chat) return InvalidArgument("--system needs --chat");
  VALET_ASSIGN_OR_RETURN(f.gen.constraint, ReadConstraintFlags(a));
  f.json = a.Has("--json");
  VALET_ASSIGN_OR_RETURN(f.gen.top_logits, a.Int("--top-logits", 0, 0, 1 << 20));
  if (f.gen.top_logits > 0 && !f.json) return InvalidArgument("--top-logits needs --json");
  return f;
}

void PrintJson(const Generation& g) {
  Json out{{"prompt_tokens", g.prompt_tokens},
           {"tokens", g.tokens},
           {"text", g.text},
           {"stop_reason", StopReasonName(g.stop_reason)}};
  if (!g.top_logits.empty()) {
    Json steps = Json::array();
    for (const auto& step : g.top_logits) {
      Json pairs = Json::array();
      for (const TopLogit& t : step) pairs.push_back(Json::array({t.token, t.logit}));
      steps.push_back(std::move(pairs));
    }
    out["top_logits"] = std::move(steps);
  }
  std::printf("%s\n", DumpJson(out).c_str());
}

}  // namespace

int RunGenerate(std::span<char* const> argv) {
  Args args;
  if (auto code = ParseCommandLine("generate", "-m MODEL -p PROMPT [flags]", kFlags, argv, &args)) return *code;
  Result<Flags> flags = ReadFlags(args);
  if (!flags.ok()) return Fail("generate", flags.status());
  Result<std::unique_ptr<Engine>> engine = Engine::Open(flags->engine);
  if (engine.ok()) ReportWeightsCache("generate", (*engine)->model().load_report());
  if (!engine.ok()) return Fail("generate", engine.status());
  TextCallback stream;
  if (!flags->json) {
    stream = [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    };
  }
  std::string prompt = flags->prompt;
  GenerateOptions gen = flags->gen;
  if (flags->chat) {
    const ChatRenderer chat = ChatRenderer::ForFormat((*engine)->chat_format());
    if (!chat.uses_model_template()) std::fprintf(stderr, "valet generate: %s\n", chat.fallback_reason().c_str());
    Result<RenderedPrompt> r = chat.RenderChat(flags->system, {{"user", flags->prompt}});
    if (!r.ok()) return Fail("generate", r.status());
    prompt = r->shared + r->own;
    gen.prompt_literal = JoinedLiteral(*r);
    gen.stop_strings.insert(gen.stop_strings.end(), chat.stop_strings().begin(), chat.stop_strings().end());
  }
  Result<Generation> g = Generate(**engine, prompt, gen, stream);
  if (!g.ok()) return Fail("generate", g.status());
  if (flags->json) {
    PrintJson(*g);
  } else {
    const size_t n_prompt = g->prompt_tokens.size(), n_gen = g->tokens.size();
    std::fprintf(stderr, "\n\nprompt: %zu tokens in %.1f ms (%.1f tok/s) | generated: %zu tokens in %.1f ms (%.1f tok/s) | stop: %s\n",
                 n_prompt, g->prefill_seconds * 1e3, n_prompt / g->prefill_seconds, n_gen,
                 g->decode_seconds * 1e3, n_gen > 1 ? (n_gen - 1) / g->decode_seconds : 0.0,
                 StopReasonName(g->stop_reason));
  }
  return 0;
}

}  // namespace valet::cli
