// How a task's tokens are drawn and why its generation stopped: the sampling
// parameters and stop reasons that both the public Scheduler API and the
// engine's sampler use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "valet/export.h"

namespace valet {

inline constexpr uint64_t kDefaultSamplingSeed = 0x5eed5eed5eed5eedULL;

// llama.cpp's default chain: repetition penalty, top-k, top-p, min-p,
// temperature, softmax, draw.
struct SamplingParams {
  float temperature = 0.8f;     // <= 0: greedy (argmax, ties to the lowest id)
  int32_t top_k = 40;           // 0: disabled
  float top_p = 0.95f;          // 1: disabled
  float min_p = 0.05f;          // 0: disabled
  float repeat_penalty = 1.0f;  // 1: disabled
  int32_t repeat_last_n = 64;   // accepted tokens the penalty looks back over; 0: none
  // OpenAI's penalties over the tokens generated so far, in [-2, 2]; 0: off.
  // A token's logit drops by presence_penalty once it has been generated and
  // by frequency_penalty times the number of times it was.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  uint64_t seed = kDefaultSamplingSeed;
};

enum class StopReason { kNone, kEos, kMaxTokens, kStopString };

// Log-probabilities are those of the model's raw distribution: log_softmax of
// the logits the model produced for the position, before the repetition,
// presence and frequency penalties, temperature and the top-k/top-p/min-p
// filters. So they describe the model, not the sampler's narrowed choice, and
// a token the filters removed still has its own.
struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;  // natural log; -inf for a token the model rules out
  std::string piece;     // the token's bytes (filled by the scheduler; empty from an engine)
};

// Asked for with a top_logprobs of 0..kMaxTopLogprobs; -1 asks for nothing
// and costs nothing.
inline constexpr int32_t kMaxTopLogprobs = 20;

struct TokenLogprobs {
  TokenLogprob sampled;           // the token that was generated
  std::vector<TokenLogprob> top;  // the top_logprobs most likely, most likely first (ties: lower id first)
};

VALET_API const char* StopReasonName(StopReason reason);

}  // namespace valet
