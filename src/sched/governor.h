// The token budget governor: app lifecycle events move a small state machine,
// and the state picks each tier's budget from the table. It also counts the
// tokens each tier generated in the current state, for the state caps. Pure
// bookkeeping: no clock, no timers; the scheduler asks it on every decision.
#pragma once

#include <array>
#include <cstdint>

#include "valet/scheduler.h"

namespace valet {

class Governor {
 public:
  Governor(BudgetTable table, LifecycleState initial);

  // Moves to the next state and resets the per-state token counts (a new
  // state gives its caps afresh). InvalidArgument when out of order; nothing
  // changes then.
  Status OnLifecycleEvent(LifecycleEvent event);

  const TierBudget& Budget(Tier tier) const { return table_.at(state_, tier); }
  LifecycleState state() const { return state_; }

  // False once the tier has used its state cap.
  bool MayRun(Tier tier) const;
  void Charge(Tier tier, int32_t generated_tokens);
  int64_t used(Tier tier) const { return used_[static_cast<size_t>(tier)]; }

 private:
  BudgetTable table_;
  LifecycleState state_;
  std::array<int64_t, kNumTiers> used_{};
};

}  // namespace valet
