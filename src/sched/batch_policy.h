// Decides how many lower-tier decode tokens ride along in the lead task's
// step. kStrict: none. kFill: only in the lead's decode steps, and only as
// many as keep the measured extra cost within a fraction of a solo decode
// step, so the foreground TPOT grows by at most that fraction. Costs are
// measured from the steps themselves (a single probe rider when unknown).
#pragma once

#include <cstdint>

#include "valet/scheduler.h"

namespace valet {

struct BatchPlanInput {
  bool lead_decoding = false;  // the lead's item is a single decode token
  int32_t candidates = 0;      // lower-tier tasks ready to decode with resident KV
  int32_t max_riders = 0;      // room left in the step (engine token limit)
};

class BatchPolicy {
 public:
  BatchPolicy(BatchMode mode, double max_cost_fraction) : mode_(mode), fraction_(max_cost_fraction) {}

  // Riders to add to the lead's step.
  int32_t Plan(const BatchPlanInput& input) const;
  // Feeds back a finished step made only of single-token decode items.
  void ObserveDecodeStep(int32_t items, double seconds);

  double solo_seconds() const { return solo_n_ == 0 ? -1.0 : solo_sum_ / solo_n_; }
  double marginal_seconds() const { return marginal_n_ == 0 ? -1.0 : marginal_sum_ / marginal_n_; }

 private:
  BatchMode mode_;
  double fraction_;
  double solo_sum_ = 0.0;
  int64_t solo_n_ = 0;
  double marginal_sum_ = 0.0;
  int64_t marginal_n_ = 0;
};

}  // namespace valet
