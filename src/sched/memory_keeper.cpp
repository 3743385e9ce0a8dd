// MemoryKeeper: parking, making room for the work that runs, trim-memory
// requests and run-time budgets (docs/memory.md).
#include "sched/memory_keeper.h"

#include <algorithm>

#include "sched/task_book.h"
#include "sched/task_journaling.h"

namespace valet {
namespace {
// Prefixes of background tiers go before the foreground's (SequenceSpec::prefix_rank).
constexpr int32_t kBackgroundRank = static_cast<int32_t>(Tier::kBackgroundSummary);
}  // namespace

void MemoryKeeper::ParkEverythingToDisk() {
  std::vector<Task*> open;
  for (auto& [id, task] : s_.tasks) {
    if (task->seq_open) open.push_back(task.get());
  }
  std::sort(open.begin(), open.end(), [](const Task* a, const Task* b) { return a->id < b->id; });
  for (Task* task : open) {
    if (!task->active) {
      // Resident and RAM-snapshot parks would not survive the process.
      if (task->park_kind != ParkKind::kResident && task->park_kind != ParkKind::kSnapshotRam) continue;
      if (!engine_.Resume(task->seq).ok()) continue;
      task->active = true;
    }
    Park(*task, ParkReason::kDestroy, 0, nullptr);
  }
}

size_t MemoryKeeper::EstimateBytesNeeded(const Task& incoming) {
  if (s_.kv_bytes_per_token == 0) {
    for (auto& [id, task] : s_.tasks) {
      if (!task->seq_open) continue;
      Result<SequenceInfo> info = engine_.Info(task->seq);
      if (!info.ok()) continue;
      const int32_t own = info->n_cached - info->n_shared;
      if (own > 0 && info->own_kv_bytes > 0) {
        s_.kv_bytes_per_token = info->own_kv_bytes / static_cast<size_t>(own);
        break;
      }
    }
    if (s_.kv_bytes_per_token == 0) return 0;  // nothing learned yet: assume room
  }
  int64_t tokens = incoming.max_tokens - static_cast<int64_t>(incoming.tokens.size());
  if (!incoming.seq_open) {
    tokens += static_cast<int64_t>(incoming.prompt.size());
  } else if (!incoming.active) {
    Result<SequenceInfo> info = engine_.Info(incoming.seq);
    if (info.ok()) tokens += info->n_tokens - info->n_cached;
  }
  const EngineMemory mem = engine_.memory();
  const size_t free_bytes = mem.pool_capacity_bytes > mem.pool_used_bytes ? mem.pool_capacity_bytes - mem.pool_used_bytes : 0;
  const size_t need = static_cast<size_t>(std::max<int64_t>(tokens, 0)) * s_.kv_bytes_per_token;
  return need > free_bytes ? need - free_bytes : 0;
}

void MemoryKeeper::Park(Task& task, ParkReason reason, size_t bytes_needed, const Task* cause) {
  ParkAs(task, s_.preemption.Decide(engine_, {task.seq, reason, bytes_needed}), reason, cause);
}

void MemoryKeeper::ParkAs(Task& task, ParkKind kind, ParkReason reason, const Task* cause) {
  // A durable task's KV is about to leave the pool: a copy goes to disk first.
  if (kind != ParkKind::kResident) journals_.Checkpoint(task, FileSync::kNone);
  Result<ParkReport> report = engine_.Park(task.seq, kind);
  // A snapshot the store cannot take: keep the KV, unless memory must be
  // freed, in which case it is dropped down to the prefix (recomputed later).
  const bool must_free = reason == ParkReason::kPressure || reason == ParkReason::kTrim;
  const ParkKind fallback = must_free ? ParkKind::kPartial : ParkKind::kResident;
  if (!report.ok() && kind != fallback) report = engine_.Park(task.seq, fallback);
  if (!report.ok()) {
    book_.Finish(task, TaskState::kFailed, report.status(), StopReason::kNone);
    return;
  }
  task.active = false;
  task.park_kind = report->kind;
  task.snapshot_fell_back =
      (kind == ParkKind::kSnapshotRam || kind == ParkKind::kSnapshotDisk) && report->kind == ParkKind::kPartial;
  if (report->kind == ParkKind::kPartial || report->kind == ParkKind::kFull) task.cut_chunk = 0;  // dropped with the KV
  const double now = s_.Now();
  s_.recorder.Event(task.id, TimelineKind::kParked, now, report->kind, report->bytes, report->tokens_dropped);
  const bool preempted = reason == ParkReason::kPreempted;
  // Preemption latency is measured for arrivals: the cause has not started yet.
  const bool arrival = preempted && cause != nullptr && cause->state == TaskState::kQueued;
  s_.recorder.UpdateStats([&](SchedulerStats& s) {
    ++s.parks_by_kind[static_cast<size_t>(report->kind)];
    s.recomputed_by_cause[static_cast<size_t>(RecomputeCause::kCutStep)] += report->cut_tokens_dropped;
    s.park_bytes += report->bytes;
    s.busy_seconds += report->seconds;
    s.busy_seconds_by_tier[static_cast<size_t>(task.tier)] += report->seconds;
    s.led_seconds_by_tier[static_cast<size_t>(task.tier)] += report->seconds;
    if (preempted) ++s.preemptions;
    if (arrival) s.preemption_latencies.push_back(now - cause->submit_time);
  });
  s_.recorder.SetParkCause(task.id, CauseOf(reason));
  book_.SetState(task, TaskState::kParked);
}

void MemoryKeeper::ParkAllRunning(ParkReason reason) {
  std::vector<Task*> running;
  for (auto& [id, task] : s_.tasks) {
    if (task->active) running.push_back(task.get());
  }
  std::sort(running.begin(), running.end(), [](const Task* a, const Task* b) { return a->id < b->id; });
  for (Task* t : running) Park(*t, book_.HoldReason(t->id).value_or(reason), 0, nullptr);
}

size_t MemoryKeeper::BytesAlone(int64_t tokens) const {
  // One block more than its positions: a partly filled shared-prefix block
  // is copied when the task writes past it.
  return engine_.KvBytesFor(static_cast<int32_t>(tokens)) + engine_.KvBytesFor(1);
}

Result<int32_t> MemoryKeeper::FitPool(const PreparedTask& task) const {
  const int64_t prompt = task.prompt_tokens();
  if (BytesAlone(prompt + task.max_tokens) <= s_.budgets.pool_bytes) return task.max_tokens;
  // Every admitted task fits the pool alone, so making room (parking and
  // evicting everything else) always lets it run: none fails for memory. A
  // task without a limit runs until it fills the pool alone instead.
  const int64_t least = task.until_context_end ? prompt + 1 : prompt + task.max_tokens;
  if (BytesAlone(least) > s_.budgets.pool_bytes) {
    return ResourceExhausted("the task needs " + std::to_string(BytesAlone(least)) + " bytes of KV cache for " +
                             std::to_string(least) + " tokens; the pool holds " + std::to_string(s_.budgets.pool_bytes));
  }
  // The most tokens that still fit: BytesAlone grows with the tokens.
  int32_t fits = 1;
  int32_t too_many = task.max_tokens;
  while (too_many - fits > 1) {
    const int32_t mid = fits + (too_many - fits) / 2;
    (BytesAlone(prompt + mid) <= s_.budgets.pool_bytes ? fits : too_many) = mid;
  }
  return fits;
}

int64_t MemoryKeeper::LargestLiveTask() const {
  int64_t largest = 0;
  for (const auto& [id, task] : s_.tasks) {
    largest = std::max<int64_t>(largest, static_cast<int64_t>(task->spec.shared_prefix.size() + task->prompt.size()) +
                                             task->max_tokens);
  }
  return largest;
}

bool MemoryKeeper::RelievePressure(const std::vector<const Task*>& keep, size_t bytes_needed) {
  return ParkResidentVictim(keep, bytes_needed) || DropParkedPrefix(keep) ||
         engine_.DropUnusedPrefixes(kBackgroundRank) > 0 || RestorePool() || engine_.DropUnusedPrefixes(0) > 0;
}

void MemoryKeeper::WarmForegroundPrefix() {
  if (s_.foreground_prefix.empty()) return;
  SequenceSpec spec;
  spec.shared_prefix = s_.foreground_prefix;
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
    s_.recorder.UpdateStats([&](SchedulerStats& s) {
      s.prefix_warm_tokens += step->tokens_computed;
      s.busy_seconds += step->seconds;
    });
  }
  (void)engine_.CloseSequence(*seq);
}

bool MemoryKeeper::ParkResidentVictim(const std::vector<const Task*>& keep, size_t bytes_needed) {
  // Lowest priority first: held tasks, then the back of the queue.
  Task* victim = nullptr;
  QueueKey victim_key;
  bool victim_held = false;
  for (auto& [id, task] : s_.tasks) {
    Task* t = task.get();
    if (!t->seq_open || std::find(keep.begin(), keep.end(), t) != keep.end()) continue;
    if (!t->active && t->park_kind != ParkKind::kResident) continue;
    const bool held = s_.held.count(id) != 0;
    const QueueKey key = book_.KeyFor(*t);
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

bool MemoryKeeper::DropParkedPrefix(const std::vector<const Task*>& keep) {
  // A parked task may still reference its shared prefix (partial evictions
  // and snapshots do); when nobody else uses that prefix, dropping the
  // reference frees its blocks. The task then re-prefills everything when it
  // resumes (a full park): slower, never lost. Partial evictions go first,
  // as they lose the least.
  Task* victim = nullptr;
  for (auto& [id, task] : s_.tasks) {
    Task* t = task.get();
    if (!t->seq_open || t->active || t->park_kind == ParkKind::kResident || t->park_kind == ParkKind::kFull) continue;
    if (std::find(keep.begin(), keep.end(), t) != keep.end()) continue;
    Result<SequenceInfo> info = engine_.Info(t->seq);
    if (!info.ok() || info->n_shared == 0) continue;
    if (victim == nullptr || (t->park_kind == ParkKind::kPartial && victim->park_kind != ParkKind::kPartial) ||
        (t->park_kind == victim->park_kind && book_.KeyFor(*victim) < book_.KeyFor(*t))) {
      victim = t;
    }
  }
  return victim != nullptr && EvictFully(*victim);
}

bool MemoryKeeper::EvictFully(Task& task) {
  Result<ParkReport> report = engine_.Park(task.seq, ParkKind::kFull);
  if (!report.ok()) return false;
  task.park_kind = ParkKind::kFull;
  task.cut_chunk = 0;
  s_.recorder.Event(task.id, TimelineKind::kParked, s_.Now(), report->kind, report->bytes, report->tokens_dropped);
  s_.recorder.UpdateStats([&](SchedulerStats& s) {
    ++s.parks_by_kind[static_cast<size_t>(ParkKind::kFull)];
    s.recomputed_by_cause[static_cast<size_t>(RecomputeCause::kCutStep)] += report->cut_tokens_dropped;
  });
  return true;
}

void MemoryKeeper::DropEvictedPrefixes() {
  // Snapshots keep their prefix: dropping it would cost the snapshot too.
  for (auto& [id, task] : s_.tasks) {
    Task* t = task.get();
    if (!t->seq_open || t->active || t->park_kind != ParkKind::kPartial) continue;
    if (Result<SequenceInfo> info = engine_.Info(t->seq); info.ok() && info->n_shared > 0) (void)EvictFully(*t);
  }
}

bool MemoryKeeper::RestorePool() {
  if (!s_.trimmed) return false;
  s_.trimmed = false;
  return engine_.SetMemoryBudgets(s_.budgets).ok();
}

Status MemoryKeeper::SetMemoryBudgets(const MemoryBudgets& budgets) {
  // A budget under a live task's need would leave it nowhere to run.
  const int64_t largest = LargestLiveTask();
  if (!s_.tasks.empty() && budgets.pool_bytes < BytesAlone(largest)) {
    return InvalidArgument("a KV pool of " + std::to_string(budgets.pool_bytes) + " bytes is smaller than a live task's " +
                           std::to_string(BytesAlone(largest)) + " bytes");
  }
  VALET_RETURN_IF_ERROR(engine_.SetMemoryBudgets(budgets));
  s_.budgets = budgets;
  s_.trimmed = false;
  return Status::Ok();
}

void MemoryKeeper::EvictParked(const TrimActions& actions) {
  std::vector<Task*> parked;
  for (auto& [id, task] : s_.tasks) {
    if (task->seq_open && !task->active && task->park_kind == ParkKind::kResident) parked.push_back(task.get());
  }
  std::sort(parked.begin(), parked.end(), [](const Task* a, const Task* b) { return a->id < b->id; });
  for (Task* t : parked) {
    if (!engine_.Resume(t->seq).ok()) continue;
    t->active = true;
    const ParkKind kind = actions.parked_to_disk ? engine_.AdviseTrimPark(t->seq) : ParkKind::kPartial;
    ParkAs(*t, kind, ParkReason::kTrim, nullptr);
  }
}

void MemoryKeeper::ShrinkPool() {
  const int64_t largest = LargestLiveTask();
  const EngineMemory mem = engine_.memory();
  MemoryBudgets trimmed;
  trimmed.pool_bytes = std::min(s_.budgets.pool_bytes,
                                std::max({mem.pool_used_bytes, BytesAlone(largest), engine_.KvBytesFor(1)}));
  trimmed.snapshot_ram_bytes = 0;
  if (engine_.SetMemoryBudgets(trimmed).ok()) s_.trimmed = true;
}

Status MemoryKeeper::OnTrimMemory(TrimLevel level) {
  const TrimActions actions = TrimActionsFor(level);
  // The process may be killed next: durable tasks' KV goes to disk while it is whole.
  journals_.CheckpointAll(FileSync::kFsync);
  if (actions.park_running) ParkAllRunning(ParkReason::kTrim);
  if (actions.demote_snapshots) engine_.DemoteSnapshots();
  if (actions.evict_parked) {
    EvictParked(actions);
    if (actions.drop_parked_prefixes) DropEvictedPrefixes();
    // The foreground's system prompt is the last thing to give back: only
    // when the process is next to be killed.
    engine_.DropUnusedPrefixes(level >= TrimLevel::kComplete ? 0 : kBackgroundRank);
  }
  if (actions.shrink) ShrinkPool();
  if (actions.weights) (void)engine_.AdviseWeights(*actions.weights);
  // Demotion moved RAM snapshots to disk under the tasks' feet.
  for (auto& [id, task] : s_.tasks) {
    if (!task->seq_open || task->active) continue;
    if (Result<SequenceInfo> info = engine_.Info(task->seq); info.ok()) task->park_kind = info->park_kind;
  }
  book_.Deliver();
  return Status::Ok();
}

}  // namespace valet
