// SchedulerCore and memory: making room for the work that runs, trim-memory
// requests and run-time budgets. The rule throughout: memory pressure makes
// work wait or recompute, never fail (docs/memory.md).
#include <algorithm>

#include "sched/scheduler_core.h"

namespace valet {

size_t SchedulerCore::BytesAlone(int64_t tokens) const {
  // One block more than its positions: a partly filled shared-prefix block
  // is copied when the task writes past it.
  return engine_.KvBytesFor(static_cast<int32_t>(tokens)) + engine_.KvBytesFor(1);
}

Result<int32_t> SchedulerCore::FitPool(const PreparedTask& task) const {
  const int64_t prompt = task.prompt_tokens();
  if (BytesAlone(prompt + task.max_tokens) <= budgets_.pool_bytes) return task.max_tokens;
  // Every admitted task fits the pool alone, so making room (parking and
  // evicting everything else) always lets it run: none fails for memory. A
  // task without a limit runs until it fills the pool alone instead.
  const int64_t least = task.until_context_end ? prompt + 1 : prompt + task.max_tokens;
  if (BytesAlone(least) > budgets_.pool_bytes) {
    return ResourceExhausted("the task needs " + std::to_string(BytesAlone(least)) + " bytes of KV cache for " +
                             std::to_string(least) + " tokens; the pool holds " + std::to_string(budgets_.pool_bytes));
  }
  // The most tokens that still fit: BytesAlone grows with the tokens.
  int32_t fits = 1;
  int32_t too_many = task.max_tokens;
  while (too_many - fits > 1) {
    const int32_t mid = fits + (too_many - fits) / 2;
    (BytesAlone(prompt + mid) <= budgets_.pool_bytes ? fits : too_many) = mid;
  }
  return fits;
}

int64_t SchedulerCore::LargestLiveTask() const {
  int64_t largest = 0;
  for (const auto& [id, task] : tasks_) {
    largest = std::max<int64_t>(largest, static_cast<int64_t>(task->spec.shared_prefix.size() + task->prompt.size()) +
                                             task->max_tokens);
  }
  return largest;
}

namespace {
// Prefixes of background tiers go before the foreground's (SequenceSpec::prefix_rank).
constexpr int32_t kBackgroundRank = static_cast<int32_t>(Tier::kBackgroundSummary);
}  // namespace

bool SchedulerCore::RelievePressure(const std::vector<const Task*>& keep, size_t bytes_needed) {
  return ParkResidentVictim(keep, bytes_needed) || DropParkedPrefix(keep) ||
         engine_.DropUnusedPrefixes(kBackgroundRank) > 0 || RestorePool() || engine_.DropUnusedPrefixes(0) > 0;
}

void SchedulerCore::WarmForegroundPrefix() {
  if (foreground_prefix_.empty()) return;
  SequenceSpec spec;
  spec.shared_prefix = foreground_prefix_;
  spec.prefix_rank = static_cast<int32_t>(Tier::kForegroundChat);
  Result<SequenceId> seq = engine_.OpenSequence(spec);
  if (!seq.ok()) return;
  // Within the budgets as they are: no parking for it, a full pool skips it.
  for (;;) {
    Result<SequenceInfo> info = engine_.Info(*seq);
    if (!info.ok() || info->pending_recompute == 0) break;
    const StepItem item{*seq, {}, std::min(info->pending_recompute, engine_.max_step_tokens()), false};
    Result<StepResult> step = engine_.Step({&item, 1});
    if (!step.ok()) break;
    recorder_.UpdateStats([&](SchedulerStats& s) {
      s.prefix_warm_tokens += step->tokens_computed;
      s.busy_seconds += step->seconds;
    });
  }
  (void)engine_.CloseSequence(*seq);
}

bool SchedulerCore::ParkResidentVictim(const std::vector<const Task*>& keep, size_t bytes_needed) {
  // Lowest priority first: held tasks, then the back of the queue.
  Task* victim = nullptr;
  QueueKey victim_key;
  bool victim_held = false;
  for (auto& [id, task] : tasks_) {
    Task* t = task.get();
    if (!t->seq_open || std::find(keep.begin(), keep.end(), t) != keep.end()) continue;
    if (!t->active && t->park_kind != ParkKind::kResident) continue;
    const bool held = held_.count(id) != 0;
    const QueueKey key = KeyFor(*t);
    const bool lower = victim == nullptr || (held && !victim_held) || (held == victim_held && victim_key < key);
    if (lower) {
      victim = t;
      victim_key = key;
      victim_held = held;
    }
  }
  if (victim == nullptr) return false;
  if (!victim->active) {
    // A resident park holds the pool; resume (free) to park it for real.
    if (!engine_.Resume(victim->seq).ok()) return false;
    victim->active = true;
  }
  Park(*victim, ParkReason::kPressure, bytes_needed, nullptr);
  return true;
}

bool SchedulerCore::DropParkedPrefix(const std::vector<const Task*>& keep) {
  // A parked task may still reference its shared prefix (partial evictions
  // and snapshots do); when nobody else uses that prefix, dropping the
  // reference frees its blocks. The task then re-prefills everything when it
  // resumes (a full park): slower, never lost. Partial evictions go first,
  // as they lose the least.
  Task* victim = nullptr;
  for (auto& [id, task] : tasks_) {
    Task* t = task.get();
    if (!t->seq_open || t->active || t->park_kind == ParkKind::kResident || t->park_kind == ParkKind::kFull) continue;
    if (std::find(keep.begin(), keep.end(), t) != keep.end()) continue;
    Result<SequenceInfo> info = engine_.Info(t->seq);
    if (!info.ok() || info->n_shared == 0) continue;
    if (victim == nullptr || (t->park_kind == ParkKind::kPartial && victim->park_kind != ParkKind::kPartial) ||
        (t->park_kind == victim->park_kind && KeyFor(*victim) < KeyFor(*t))) {
      victim = t;
    }
  }
  return victim != nullptr && EvictFully(*victim);
}

bool SchedulerCore::EvictFully(Task& task) {
  Result<ParkReport> report = engine_.Park(task.seq, ParkKind::kFull);
  if (!report.ok()) return false;
  task.park_kind = ParkKind::kFull;
  recorder_.Event(task.id, TimelineKind::kParked, Now(), report->kind, report->bytes, report->tokens_dropped);
  recorder_.UpdateStats([&](SchedulerStats& s) { ++s.parks_by_kind[static_cast<size_t>(ParkKind::kFull)]; });
  return true;
}

void SchedulerCore::DropEvictedPrefixes() {
  // Snapshots keep their prefix: dropping it would cost the snapshot too.
  for (auto& [id, task] : tasks_) {
    Task* t = task.get();
    if (!t->seq_open || t->active || t->park_kind != ParkKind::kPartial) continue;
    if (Result<SequenceInfo> info = engine_.Info(t->seq); info.ok() && info->n_shared > 0) (void)EvictFully(*t);
  }
}

bool SchedulerCore::RestorePool() {
  if (!trimmed_) return false;
  trimmed_ = false;
  return engine_.SetMemoryBudgets(budgets_).ok();
}

Status SchedulerCore::SetMemoryBudgets(const MemoryBudgets& budgets) {
  // A budget under a live task's need would leave it nowhere to run.
  const int64_t largest = LargestLiveTask();
  if (!tasks_.empty() && budgets.pool_bytes < BytesAlone(largest)) {
    return InvalidArgument("a KV pool of " + std::to_string(budgets.pool_bytes) + " bytes is smaller than a live task's " +
                           std::to_string(BytesAlone(largest)) + " bytes");
  }
  VALET_RETURN_IF_ERROR(engine_.SetMemoryBudgets(budgets));
  budgets_ = budgets;
  trimmed_ = false;
  return Status::Ok();
}

void SchedulerCore::EvictParked() {
  std::vector<Task*> parked;
  for (auto& [id, task] : tasks_) {
    if (task->seq_open && !task->active && task->park_kind == ParkKind::kResident) parked.push_back(task.get());
  }
  std::sort(parked.begin(), parked.end(), [](const Task* a, const Task* b) { return a->id < b->id; });
  for (Task* t : parked) {
    if (!engine_.Resume(t->seq).ok()) continue;
    t->active = true;
    Park(*t, ParkReason::kTrim, 0, nullptr);
  }
}

void SchedulerCore::ShrinkPool() {
  const int64_t largest = LargestLiveTask();
  const EngineMemory mem = engine_.memory();
  MemoryBudgets trimmed;
  trimmed.pool_bytes = std::min(budgets_.pool_bytes,
                                std::max({mem.pool_used_bytes, BytesAlone(largest), engine_.KvBytesFor(1)}));
  trimmed.snapshot_ram_bytes = 0;
  if (engine_.SetMemoryBudgets(trimmed).ok()) trimmed_ = true;
}

Status SchedulerCore::OnTrimMemory(TrimLevel level) {
  const TrimActions actions = TrimActionsFor(level);
  // The process may be killed next: durable tasks' KV goes to disk while it is whole.
  CheckpointAll(FileSync::kFsync);
  if (actions.park_running) ParkAllRunning(ParkReason::kTrim);
  if (actions.demote_snapshots) engine_.DemoteSnapshots();
  if (actions.evict_parked) {
    EvictParked();
    if (actions.drop_parked_prefixes) DropEvictedPrefixes();
    // The foreground's system prompt is the last thing to give back: only
    // when the process is next to be killed.
    engine_.DropUnusedPrefixes(level >= TrimLevel::kComplete ? 0 : kBackgroundRank);
  }
  if (actions.shrink) ShrinkPool();
  if (actions.weights) (void)engine_.AdviseWeights(*actions.weights);
  // Demotion moved RAM snapshots to disk under the tasks' feet.
  for (auto& [id, task] : tasks_) {
    if (!task->seq_open || task->active) continue;
    if (Result<SequenceInfo> info = engine_.Info(task->seq); info.ok()) task->park_kind = info->park_kind;
  }
  Deliver();
  return Status::Ok();
}

}  // namespace valet
