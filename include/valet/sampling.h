// How a task's tokens are drawn and why its generation stopped: the sampling
// parameters and stop reasons that both the public Scheduler API and the
// engine's sampler use.
#pragma once

#include <cstdint>

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

VALET_API const char* StopReasonName(StopReason reason);

}  // namespace valet
