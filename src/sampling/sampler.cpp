#include "sampling/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>

namespace valet {
namespace {

Status ValidateParams(const SamplingParams& p, int32_t n_vocab) {
  if (n_vocab <= 0) return InvalidArgument("n_vocab must be positive, got " + std::to_string(n_vocab));
  if (std::isnan(p.temperature) || std::isinf(p.temperature)) {
    return InvalidArgument("temperature must be finite");
  }
  if (!(p.top_p >= 0.0f && p.top_p <= 1.0f)) return InvalidArgument("top_p must be in [0, 1]");
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) return InvalidArgument("min_p must be in [0, 1]");
  if (p.top_k < 0) return InvalidArgument("top_k must be >= 0 (0 disables it)");
  if (!(p.repeat_penalty > 0.0f) || std::isinf(p.repeat_penalty)) {
    return InvalidArgument("repeat_penalty must be finite and > 0 (1 disables it)");
  }
  if (p.repeat_last_n < 0) return InvalidArgument("repeat_last_n must be >= 0");
  if (!(p.presence_penalty >= -2.0f && p.presence_penalty <= 2.0f)) {
    return InvalidArgument("presence_penalty must be in [-2, 2]");
  }
  if (!(p.frequency_penalty >= -2.0f && p.frequency_penalty <= 2.0f)) {
    return InvalidArgument("frequency_penalty must be in [-2, 2]");
  }
  return Status::Ok();
}

}  // namespace

Result<Sampler> Sampler::Create(const SamplingParams& params, int32_t n_vocab) {
  VALET_RETURN_IF_ERROR(ValidateParams(params, n_vocab));
  return Sampler(params, n_vocab);
}

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab)
    : params_(params),
      n_vocab_(n_vocab),
      rng_(params.seed),
      history_(static_cast<size_t>(params.repeat_last_n)) {
  distinct_scratch_.reserve(history_.size());
}

void Sampler::Accept(int32_t token) {
  if (history_.empty()) return;
  history_[history_next_] = token;
  history_next_ = (history_next_ + 1) % history_.size();
  history_size_ = std::min(history_size_ + 1, history_.size());
}

SamplerState Sampler::state() const {
  SamplerState s;
  s.recent_tokens.reserve(history_size_);
  const size_t cap = history_.size();
  for (size_t i = 0; i < history_size_; ++i) {
    s.recent_tokens.push_back(history_[(history_next_ + cap - history_size_ + i) % cap]);
  }
  s.generated = generated_;
  s.rng = rng_.state();
  return s;
}

void Sampler::set_state(const SamplerState& state) {
  history_next_ = 0;
  history_size_ = 0;
  const size_t n = state.recent_tokens.size();
  const size_t skip = n > history_.size() ? n - history_.size() : 0;
  for (size_t i = skip; i < n; ++i) Accept(state.recent_tokens[i]);
  generated_.clear();
  generated_counts_.clear();
  for (int32_t t : state.generated) CountGenerated(t);
  rng_.set_state(state.rng);
}

void Sampler::CountGenerated(int32_t token) {
  generated_.push_back(token);
  auto it = std::lower_bound(generated_counts_.begin(), generated_counts_.end(), token,
                             [](const TokenCount& c, int32_t t) { return c.token < t; });
  if (it == generated_counts_.end() || it->token != token) it = generated_counts_.insert(it, TokenCount{token, 0});
  ++it->count;
}

void Sampler::ApplyPenalty() {
  if (params_.repeat_penalty == 1.0f || history_size_ == 0) return;
  // The ring holds valid tokens in [0, history_size_) until it wraps, and all
  // slots after that, so the first history_size_ slots are exactly the window.
  distinct_scratch_.assign(history_.begin(),
                           history_.begin() + static_cast<ptrdiff_t>(history_size_));
  std::sort(distinct_scratch_.begin(), distinct_scratch_.end());
  distinct_scratch_.erase(std::unique(distinct_scratch_.begin(), distinct_scratch_.end()),
                          distinct_scratch_.end());
  ApplyRepetitionPenalty(candidates_, distinct_scratch_, params_.repeat_penalty);
}

std::span<const Candidate> Sampler::Filter(std::span<const float> logits) {
  assert(logits.size() == static_cast<size_t>(n_vocab_));
  candidates_.Reset(logits);
  ApplyPenalty();
  ApplyOccurrencePenalties(candidates_, generated_counts_, params_.presence_penalty, params_.frequency_penalty);
  if (greedy()) {
    KeepArgmax(candidates_);
    return candidates_.items;
  }
  ApplyTopK(candidates_, params_.top_k);
  ApplyTopP(candidates_, params_.top_p);
  ApplyMinP(candidates_, params_.min_p);
  ApplyTemperature(candidates_, params_.temperature);
  ApplySoftmax(candidates_);
  return candidates_.items;
}

int32_t Sampler::Sample(std::span<const float> logits) {
  std::span<const Candidate> kept = Filter(logits);
  if (kept.empty()) return -1;  // only reachable with empty logits
  const int32_t token = greedy() ? kept.front().id : kept[DrawIndex(candidates_, rng_.NextDouble())].id;
  CountGenerated(token);
  return token;
}

}  // namespace valet
