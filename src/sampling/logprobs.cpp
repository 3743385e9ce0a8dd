#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace valet {

namespace {

float Finite(float logit) { return std::isnan(logit) ? -std::numeric_limits<float>::infinity() : logit; }

// log(sum(exp(logits))), shifted by the maximum so no term overflows.
double LogSumExp(std::span<const float> logits) {
  double max = -std::numeric_limits<double>::infinity();
  for (float l : logits) max = std::max(max, static_cast<double>(Finite(l)));
  if (std::isinf(max)) return max;
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(Finite(l)) - max);
  return max + std::log(sum);
}

}  // namespace

TokenLogprobs ComputeLogprobs(std::span<const float> logits, int32_t sampled, int32_t top_n) {
  const double lse = LogSumExp(logits);
  auto logprob = [&](int32_t id) {
    return static_cast<float>(static_cast<double>(Finite(logits[static_cast<size_t>(id)])) - lse);
  };
  TokenLogprobs out;
  out.sampled.token = sampled;
  out.sampled.logprob = logprob(sampled);
  const size_t n = std::min(static_cast<size_t>(std::max(top_n, 0)), logits.size());
  if (n == 0) return out;
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), [&](int32_t a, int32_t b) {
    const float la = Finite(logits[static_cast<size_t>(a)]);
    const float lb = Finite(logits[static_cast<size_t>(b)]);
    return la != lb ? la > lb : a < b;
  });
  out.top.reserve(n);
  for (size_t i = 0; i < n; ++i) out.top.push_back({ids[i], logprob(ids[i]), {}});
  return out;
}

}  // namespace valet
