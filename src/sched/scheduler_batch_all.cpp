// QueuePolicy::kBatchAll: the baseline of llama-server's parallel slots.
// Every admitted task advances in every step: all pending decode tokens
// first, then prompt/recompute chunks in arrival order fill what is left of
// the step. A task is admitted (takes a "slot") when its KV is expected to fit
// in the pool; the oldest task is always admitted. When a step still runs out
// of pool, the newest member is parked to free memory and the step is retried.
#include <algorithm>

#include "sched/scheduler_core.h"

namespace valet {

std::vector<Task*> SchedulerCore::AdmitBatchMembers() {
  std::vector<Task*> candidates;
  for (TaskId id : queue_.Ids()) {
    Task* t = Find(id);
    if (!governor_.MayRun(t->tier)) {
      Hold(*t);
      queue_.Erase(id);
      continue;
    }
    if (HoldIfConsumerBehind(*t)) continue;
    candidates.push_back(t);
  }
  std::sort(candidates.begin(), candidates.end(), [](const Task* a, const Task* b) { return a->ticket < b->ticket; });
  std::vector<Task*> members;
  for (Task* t : candidates) {
    const bool resident = t->active || (t->seq_open && t->park_kind == ParkKind::kResident);
    if (!resident && !members.empty() && EstimateBytesNeeded(*t) > 0) continue;  // no free slot yet
    std::vector<const Task*> keep(members.begin(), members.end());
    keep.push_back(t);
    if (Activate(*t, keep) != Activation::kReady) continue;  // ended FAILED, or waits for room
    members.push_back(t);
  }
  // Whatever runs but was not admitted (a capped tier) leaves the engine.
  std::vector<Task*> others;
  for (auto& [id, task] : tasks_) {
    if (task->active && std::find(members.begin(), members.end(), task.get()) == members.end()) {
      others.push_back(task.get());
    }
  }
  std::sort(others.begin(), others.end(), [](const Task* a, const Task* b) { return a->id < b->id; });
  for (Task* t : others) {
    Park(*t, HoldReason(t->id).value_or(ParkReason::kPressure), 0, nullptr);
  }
  return members;
}

void SchedulerCore::BuildBatchAllItems(const std::vector<Task*>& members, StepPlan& plan) const {
  plan = StepPlan{};
  int32_t room = engine_.max_step_tokens();
  for (Task* t : members) {
    if (!t->decode_ready() || room <= 0) continue;
    StepItemKind kind = StepItemKind::kDecode;
    const StepItem item = NextItem(*t, 1, &kind);
    AddItem(*t, item, kind, plan);
    --room;
  }
  for (Task* t : members) {
    if (t->decode_ready()) continue;
    const int32_t limit = std::min(governor_.Budget(t->tier).prefill_chunk, room);
    if (limit <= 0) break;
    StepItemKind kind = StepItemKind::kPrefill;
    const StepItem item = NextItem(*t, limit, &kind);
    AddItem(*t, item, kind, plan);
    room -= item.recompute + static_cast<int32_t>(item.tokens.size());
  }
}

Result<StepResult> SchedulerCore::RunBatchAll(std::vector<Task*>& members, StepPlan& plan) {
  // Every slot advances together, so only stopping the scheduler cuts a step short.
  const ScopedAbortFlag abort_flag(engine_, arrivals_.stop);
  while (true) {
    BuildBatchAllItems(members, plan);
    Result<StepResult> result = engine_.Step(plan.items);
    if (result.ok() || result.status().code() != StatusCode::kResourceExhausted) return result;
    if (members.size() > 1) {
      Task* newest = members.back();
      members.pop_back();
      Park(*newest, ParkReason::kPressure, 0, nullptr);
      continue;
    }
    const int32_t tokens = plan.items[0].recompute + static_cast<int32_t>(plan.items[0].tokens.size());
    if (!RelievePressure({members[0]}, static_cast<size_t>(tokens) * std::max<size_t>(kv_bytes_per_token_, 1))) {
      return result;
    }
  }
}

bool SchedulerCore::RunBatchAllStep() {
  std::vector<Task*> members = AdmitBatchMembers();
  if (members.empty()) {
    ParkAllRunning(ParkReason::kStateCap);
    Deliver();
    // Work may remain (a task that failed to activate); the caller steps again.
    return !queue_.empty();
  }
  Tier top = members.front()->tier;
  for (const Task* t : members) top = std::min(top, t->tier);
  ApplyThreads(top);
  StepPlan plan;
  Result<StepResult> result = RunBatchAll(members, plan);
  if (!result.ok()) {
    OnStepError(plan, result.status());
    Deliver();
    return result.status().code() != StatusCode::kResourceExhausted;
  }
  ApplyStep(plan, *result);
  Deliver();
  return true;
}

}  // namespace valet
