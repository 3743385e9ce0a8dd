#include "sched/governor.h"

#include <utility>

namespace valet {

Governor::Governor(BudgetTable table, LifecycleState initial) : table_(std::move(table)), state_(initial) {}

Status Governor::OnLifecycleEvent(LifecycleEvent event) {
  VALET_ASSIGN_OR_RETURN(LifecycleState next, NextLifecycleState(state_, event));
  state_ = next;
  used_.fill(0);
  return Status::Ok();
}

bool Governor::MayRun(Tier tier) const {
  const int64_t cap = Budget(tier).state_cap_tokens;
  return cap == kUnlimitedTokens || used_[static_cast<size_t>(tier)] < cap;
}

void Governor::Charge(Tier tier, int32_t generated_tokens) {
  used_[static_cast<size_t>(tier)] += generated_tokens;
}

}  // namespace valet
