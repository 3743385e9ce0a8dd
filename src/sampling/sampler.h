// Picks the next token from a logit vector: llama.cpp's default chain
// (repetition penalty, top-k, top-p, min-p, temperature, softmax, draw), with a
// seeded RNG whose state, with the penalty history, can be snapshotted and
// restored so a paused sequence resumes with the identical token stream.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/candidates.h"
#include "sampling/rng.h"
#include "valet/sampling.h"
#include "valet/status.h"

namespace valet {

// Everything that makes two samplers with equal params produce the same tokens.
struct SamplerState {
  std::vector<int32_t> recent_tokens;  // oldest first, at most repeat_last_n
  std::vector<int32_t> generated;      // every token Sample drew, oldest first
  RngState rng;

  bool operator==(const SamplerState&) const = default;
};

class Sampler {
 public:
  // InvalidArgument on NaN or out-of-range params or n_vocab <= 0.
  static Result<Sampler> Create(const SamplingParams& params, int32_t n_vocab);

  // Draws a token id. Precondition: logits.size() == n_vocab. Greedy sampling
  // does not touch the RNG; otherwise each call consumes exactly one draw.
  int32_t Sample(std::span<const float> logits);

  // The candidates Sample would draw from, with their final probabilities
  // (after temperature). Valid until the next Sample/Filter call.
  std::span<const Candidate> Filter(std::span<const float> logits);

  // Records a token that became part of the sequence (for the repetition
  // penalty). The presence/frequency penalties count what Sample drew instead.
  void Accept(int32_t token);

  SamplerState state() const;
  // state().rng without copying the token lists.
  RngState rng_state() const { return rng_.state(); }
  // Keeps the newest repeat_last_n of state.recent_tokens.
  void set_state(const SamplerState& state);

  const SamplingParams& params() const { return params_; }
  int32_t n_vocab() const { return n_vocab_; }

 private:
  Sampler(const SamplingParams& params, int32_t n_vocab);

  bool greedy() const { return params_.temperature <= 0.0f; }
  void ApplyPenalty();
  void CountGenerated(int32_t token);

  SamplingParams params_;
  int32_t n_vocab_;
  Rng rng_;
  std::vector<int32_t> history_;  // ring buffer of capacity repeat_last_n
  size_t history_next_ = 0;       // slot the next accepted token goes to
  size_t history_size_ = 0;
  std::vector<int32_t> distinct_scratch_;
  std::vector<int32_t> generated_;
  std::vector<TokenCount> generated_counts_;  // by ascending token
  CandidateList candidates_;
};

}  // namespace valet
