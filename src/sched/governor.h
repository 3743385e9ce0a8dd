// The token budget governor: app lifecycle events move a small state machine,
// and the state picks each tier's budget from the table; the phone's thermal
// status caps those budgets (threads, which tiers run). It also counts the
// tokens each tier generated in the current state, for the state caps; the
// battery (PowerState) decides which tiers may run at all (the power column). Pure
// bookkeeping: no clock, no timers; the scheduler asks it on every decision.
#pragma once

#include <array>
#include <cstdint>

#include "valet/scheduler.h"

namespace valet {

class Governor {
 public:
  Governor(BudgetTable table, LifecycleState initial, PowerState power = {});

  // Moves to the next state and resets the per-state token counts (a new
  // state gives its caps afresh). The first event may be ON_CREATE from any
  // state (LifecycleHistory). InvalidArgument when out of order; nothing
  // changes then.
  Status OnLifecycleEvent(LifecycleEvent event);
  // InvalidArgument for a status outside 0..6; nothing changes then. The
  // token counts carry on: heat is not a new app state.
  Status OnThermalStatus(ThermalStatus status, float headroom);
  // InvalidArgument for a battery_percent outside -1..100; nothing changes
  // then. The token counts carry on, as for heat.
  Status OnPowerState(const PowerState& power);

  // The lifecycle state's budget under the thermal caps.
  TierBudget Budget(Tier tier) const;
  LifecycleState state() const { return state_; }
  ThermalStatus thermal_status() const { return thermal_; }
  const PowerState& power() const { return power_; }
  // Whether the battery lets the tier run (the table's power column).
  bool PowerAllows(Tier tier) const { return table_.needs(tier).MetBy(power_); }

  // False once the tier has used its state cap, or while heat or the battery parks it.
  bool MayRun(Tier tier) const;
  void Charge(Tier tier, int32_t generated_tokens);
  int64_t used(Tier tier) const { return used_[static_cast<size_t>(tier)]; }

 private:
  BudgetTable table_;
  LifecycleState state_;
  LifecycleHistory history_ = LifecycleHistory::kNoEventYet;
  ThermalStatus thermal_ = ThermalStatus::kNone;
  PowerState power_;
  std::array<int64_t, kNumTiers> used_{};
};

}  // namespace valet
