// Log-probabilities of a logit vector, for the OpenAI `logprobs` fields: the
// sampled token's and the most likely tokens', over the full vocabulary.
#pragma once

#include <cstdint>
#include <span>

#include "valet/sampling.h"

namespace valet {

// log_softmax(logits)[sampled] and the `top_n` largest entries (most likely
// first, ties to the lower id); pieces are left empty. -inf logits (masked
// tokens) get -inf; NaN counts as -inf. Precondition: 0 <= sampled <
// logits.size(), top_n >= 0. Computed in double, so the sum over the
// vocabulary of exp(logprob) is 1 to float precision.
TokenLogprobs ComputeLogprobs(std::span<const float> logits, int32_t sampled, int32_t top_n);

}  // namespace valet
