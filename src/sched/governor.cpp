#include "sched/governor.h"

#include <algorithm>
#include <utility>

namespace valet {

namespace {

// A cap of 0 is no cap; a budget of 0 threads means "all", so any cap is smaller.
int32_t CapThreads(int32_t threads, int32_t cap) {
  if (cap <= 0) return threads;
  return threads <= 0 ? cap : std::min(threads, cap);
}

bool IsBackground(Tier tier) { return tier >= Tier::kBackgroundSummary; }

}  // namespace

Governor::Governor(BudgetTable table, LifecycleState initial, PowerState power)
    : table_(std::move(table)), state_(initial), power_(power) {}

Status Governor::OnLifecycleEvent(LifecycleEvent event) {
  VALET_ASSIGN_OR_RETURN(LifecycleState next, NextLifecycleState(state_, event, history_));
  state_ = next;
  history_ = LifecycleHistory::kEventsSeen;
  used_.fill(0);
  return Status::Ok();
}

Status Governor::OnThermalStatus(ThermalStatus status, float headroom) {
  VALET_ASSIGN_OR_RETURN(ThermalStatus checked, ThermalStatusFromInt(static_cast<int>(status)));
  thermal_ = EffectiveThermalStatus(checked, headroom);
  return Status::Ok();
}

Status Governor::OnPowerState(const PowerState& power) {
  VALET_RETURN_IF_ERROR(CheckPowerState(power));
  power_ = power;
  return Status::Ok();
}

TierBudget Governor::Budget(Tier tier) const {
  TierBudget b = table_.at(state_, tier);
  const ThermalCaps& caps = table_.caps(thermal_);
  b.threads = CapThreads(b.threads, caps.threads);
  if (IsBackground(tier)) b.threads = CapThreads(b.threads, caps.background_threads);
  return b;
}

bool Governor::MayRun(Tier tier) const {
  if (tier > table_.caps(thermal_).lowest_running_tier || !PowerAllows(tier)) return false;
  const int64_t cap = table_.at(state_, tier).state_cap_tokens;
  return cap == kUnlimitedTokens || used_[static_cast<size_t>(tier)] < cap;
}

void Governor::Charge(Tier tier, int32_t generated_tokens) {
  used_[static_cast<size_t>(tier)] += generated_tokens;
}

}  // namespace valet
