#include "engine/generator.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "constrain/sequence_constraint.h"

namespace valet {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<TopLogit> TopK(std::span<const float> logits, int32_t k) {
  std::vector<TopLogit> all(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) all[i] = {static_cast<int32_t>(i), logits[i]};
  const size_t n = std::min(static_cast<size_t>(std::max(k, 0)), all.size());
  std::partial_sort(all.begin(), all.begin() + n, all.end(), [](const TopLogit& a, const TopLogit& b) {
    return a.logit != b.logit ? a.logit > b.logit : a.token < b.token;
  });
  all.resize(n);
  return all;
}

Result<Generation> Generate(Engine& engine, std::string_view prompt, const GenerateOptions& options,
                            const TextCallback& on_text) {
  const int32_t n_ctx = engine.context().options().n_ctx;
  const int32_t n_vocab = engine.model().config().n_vocab;
  if (options.max_tokens <= 0) return InvalidArgument("max tokens must be positive");
  if (options.prefill_chunk <= 0 || options.prefill_chunk > engine.context().options().max_batch_tokens) {
    return InvalidArgument("prefill chunk must be between 1 and the batch limit of " +
                           std::to_string(engine.context().options().max_batch_tokens));
  }
  if (options.top_logits < 0) return InvalidArgument("top-logits must not be negative");
  VALET_ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(options.sampling, n_vocab));
  StopOptions stop_options;
  const std::span<const int32_t> eog = engine.tokenizer().vocabulary().eog_ids();
  stop_options.eos_token_ids.assign(eog.begin(), eog.end());
  stop_options.max_tokens = options.max_tokens;
  stop_options.stop_strings = options.stop_strings;
  VALET_ASSIGN_OR_RETURN(StopChecker stop, StopChecker::Create(stop_options));

  std::optional<SequenceConstraint> constraint;
  double constraint_seconds = 0.0;
  if (options.constraint.active()) {
    const auto c0 = std::chrono::steady_clock::now();
    ConstraintCompiler compiler([&engine] { return TokenTrie::FromTokenizer(engine.tokenizer()); }, 1);
    VALET_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> compiled, compiler.Compile(options.constraint));
    VALET_ASSIGN_OR_RETURN(constraint, SequenceConstraint::Create(std::move(compiled)));
    constraint_seconds += SecondsSince(c0);
  }

  Generation g;
  g.prompt_tokens = engine.TokenizePrompt(prompt, {.add_bos = true, .literal = options.prompt_literal});
  if (g.prompt_tokens.empty()) return InvalidArgument("the prompt is empty");
  if (static_cast<int64_t>(g.prompt_tokens.size()) >= n_ctx) {
    return OutOfRange("the prompt has " + std::to_string(g.prompt_tokens.size()) +
                      " tokens, which leaves no room in the context of " + std::to_string(n_ctx));
  }
  for (int32_t t : g.prompt_tokens) sampler.Accept(t);

  KvSequence seq(engine.kv_pool());
  std::vector<float> logits;
  const auto t0 = std::chrono::steady_clock::now();
  std::span<const int32_t> rest(g.prompt_tokens);
  while (!rest.empty()) {
    const size_t n = std::min(rest.size(), static_cast<size_t>(options.prefill_chunk));
    BatchItem item{&seq, rest.first(n), n == rest.size() ? LogitsMode::kLast : LogitsMode::kNone};
    VALET_RETURN_IF_ERROR(engine.context().Forward({&item, 1}, logits));
    rest = rest.subspan(n);
  }
  g.prefill_seconds = SecondsSince(t0);

  const auto t1 = std::chrono::steady_clock::now();
  for (;;) {
    if (options.top_logits > 0) g.top_logits.push_back(TopK(logits, options.top_logits));
    std::span<const float> allowed = logits;
    if (constraint) {
      const auto c0 = std::chrono::steady_clock::now();
      VALET_RETURN_IF_ERROR(constraint->PrepareMask());
      allowed = constraint->Apply(logits);
      constraint_seconds += SecondsSince(c0);
    }
    const int32_t token = sampler.Sample(allowed);
    sampler.Accept(token);
    if (constraint) {
      const auto c1 = std::chrono::steady_clock::now();
      VALET_RETURN_IF_ERROR(constraint->Accept(token));
      constraint_seconds += SecondsSince(c1);
    }
    g.tokens.push_back(token);
    StopDecision d = stop.Feed(token, engine.tokenizer().TokenToPiece(token));
    g.text += d.text;
    if (on_text && !d.text.empty()) on_text(d.text);
    if (d.stopped()) {
      g.stop_reason = d.reason;
      break;
    }
    if (seq.n_tokens() + 1 > n_ctx) {  // context full: end as if the budget ran out
      std::string tail = stop.Flush();
      g.text += tail;
      if (on_text && !tail.empty()) on_text(tail);
      g.stop_reason = StopReason::kMaxTokens;
      break;
    }
    BatchItem item{&seq, {&g.tokens.back(), 1}, LogitsMode::kLast};
    VALET_RETURN_IF_ERROR(engine.context().Forward({&item, 1}, logits));
  }
  g.decode_seconds = SecondsSince(t1);
  g.constraint_seconds = constraint_seconds;
  return g;
}

}  // namespace valet
