#include "sched/batch_policy.h"

#include <algorithm>
#include <cmath>

namespace valet {

int32_t BatchPolicy::Plan(const BatchPlanInput& input) const {
  if (mode_ != BatchMode::kFill || !input.lead_decoding) return 0;
  const int32_t room = std::min(input.candidates, input.max_riders);
  if (room <= 0 || solo_n_ == 0) return 0;  // measure a solo step first
  if (marginal_n_ == 0) return 1;          // probe the marginal cost once
  const double marginal = marginal_seconds();
  if (marginal <= 0.0) return room;
  const double allowed = fraction_ * solo_seconds() / marginal;
  const double k = std::floor(allowed + 1e-9);
  return static_cast<int32_t>(std::min<double>(room, std::max(0.0, k)));
}

void BatchPolicy::ObserveDecodeStep(int32_t items, double seconds) {
  if (items <= 0) return;
  if (items == 1) {
    solo_sum_ += seconds;
    ++solo_n_;
    return;
  }
  if (solo_n_ == 0) return;
  marginal_sum_ += (seconds - solo_seconds()) / (items - 1);
  ++marginal_n_;
}

}  // namespace valet
