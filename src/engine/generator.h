// Single-sequence text generation on an Engine: tokenize, prefill in chunks,
// then sample and decode until a stop condition. This is what `valet generate`
// runs; the scheduler drives the same steps itself, one at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "valet/constraint.h"

#include "engine/engine.h"
#include "sampling/sampler.h"
#include "sampling/stop_condition.h"
#include "valet/status.h"

namespace valet {

struct GenerateOptions {
  int32_t max_tokens = 128;
  SamplingParams sampling;
  std::vector<std::string> stop_strings;
  int32_t top_logits = 0;      // record the top-K (token, logit) pairs of every step
  int32_t prefill_chunk = 512;  // prompt tokens per forward step
  // Byte ranges of the prompt where control-token texts are text (a chat's
  // message content, RenderedPrompt's ranges); sorted, disjoint.
  std::vector<ByteRange> prompt_literal;
  // What the output must follow (a JSON Schema, any JSON object, a GBNF
  // grammar or a regex; docs/structured-output.md): every token is masked to
  // it, and generation ends at end-of-generation once the constraint can end.
  Constraint constraint;
};

struct TopLogit {
  int32_t token;
  float logit;
};

struct Generation {
  std::vector<int32_t> prompt_tokens;  // BOS included when the vocabulary adds it
  std::vector<int32_t> tokens;         // generated, EOS included if it was sampled
  std::string text;                    // what was streamed
  StopReason stop_reason = StopReason::kNone;
  std::vector<std::vector<TopLogit>> top_logits;  // [steps][K], when asked for
  double prefill_seconds = 0.0;  // prompt processing up to the first logits
  double decode_seconds = 0.0;   // everything after
  // Of the total, the constraint's: its compile (token trie included) and
  // every step's mask, application and matcher update.
  double constraint_seconds = 0.0;
};

// Receives each piece of text as soon as it is safe to show.
using TextCallback = std::function<void(std::string_view)>;

// The K largest logits, largest first (ties to the lower id).
std::vector<TopLogit> TopK(std::span<const float> logits, int32_t k);

Result<Generation> Generate(Engine& engine, std::string_view prompt, const GenerateOptions& options,
                            const TextCallback& on_text = {});

}  // namespace valet
