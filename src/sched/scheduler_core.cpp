// SchedulerCore: admission, cancellation, lifecycle events, parking and
// finishing. The step itself is in scheduler_step.cpp.
#include "sched/scheduler_core.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace valet {

namespace {

double SteadySeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

DurableOptions DurableOptionsOf(const SchedulerOptions& options) {
  return {.dir = options.durable_dir,
          .model_fingerprint = options.model_fingerprint,
          .disk_budget_bytes = options.durable_disk_budget_bytes,
          .before_journal_append = options.durable_write_hooks.before_journal_append,
          .before_checkpoint_rename = options.durable_write_hooks.before_checkpoint_rename};
}

}  // namespace

SchedulerCore::SchedulerCore(EngineInterface& engine, SchedulerOptions options)
    : engine_(engine),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : std::function<double()>(SteadySeconds)),
      recorder_(RecorderLimits{.finished_tasks = options_.finished_task_records}),
      preparer_(engine, {.literal_content = !options_.parse_special_in_messages}),
      governor_(options_.budgets, options_.initial_state, options_.initial_power),
      preemption_(options_.park_policy),
      batch_(options_.batch_mode, options_.fill_max_cost_fraction),
      budgets_(engine.memory_budgets()),
      durable_(DurableOptionsOf(options_), options_.durable_dir.empty()
                                               ? JournalIdentity{}
                                               : SchedulerJournalIdentity(engine, options_.model_fingerprint,
                                                                          options_.parse_special_in_messages)),
      admission_(engine, preparer_, durable_, recorder_, clock_) {
  recorder_.UpdateStats([&](SchedulerStats& s) {
    s.lifecycle = governor_.state();
    s.power = governor_.power();
  });
}

SchedulerCore::~SchedulerCore() { (void)RestorePool(); }

Result<TaskId> SchedulerCore::Submit(TaskRequest request) {
  bool durable = false;
  AdmissionSteps steps;
  steps.fit = [this](const PreparedTask& prepared) { return FitPool(prepared); };
  steps.accept = [&](AdmittedTask task) {
    durable = task.journal.has_value();
    Enqueue(task.id, std::move(task.prepared), task.max_tokens, std::move(task.journal));
  };
  Result<TaskId> id = admission_.Admit(std::move(request), steps);
  if (!id.ok()) return id;
  if (durable) TryJournalsAgain();  // its journal was just written: the disk takes writes
  Deliver();
  return id;
}

Status SchedulerCore::Admit(TaskId id, PreparedTask prepared, std::optional<TaskJournal> journal) {
  Result<int32_t> max_tokens = FitPool(prepared);
  if (max_tokens.ok()) {
    const bool durable = journal.has_value();
    Enqueue(id, std::move(prepared), *max_tokens, std::move(journal));
    if (durable) TryJournalsAgain();  // its journal was just written: the disk takes writes
    Deliver();
    return Status::Ok();
  }
  // Found too large after an id was handed out: the task ends FAILED, visibly,
  // and a durable one's journal says so until the app acknowledges it (a
  // cancel that came first forgets it, as any cancel does).
  const TaskState state = FailRegistered(id, prepared.request.callbacks, max_tokens.status(), prepared.request.durable_key);
  if (journal) {
    const Status written = state == TaskState::kCancelled
                               ? journal->Remove()
                               : journal->MarkDone({TaskState::kFailed, StopReason::kNone, max_tokens.status().message()});
    if (!written.ok()) recorder_.UpdateStats([](SchedulerStats& s) { ++s.journal_errors; });
  }
  Deliver();
  return max_tokens.status();
}

TaskState SchedulerCore::FailRegistered(TaskId id, const TaskCallbacks& callbacks, const Status& status,
                                        const std::string& durable_key) {
  TaskResult result;
  result.state = TaskState::kFailed;
  result.status = status;
  if (hooks_.settle_end && hooks_.settle_end(id)) {
    result.state = TaskState::kCancelled;
    result.status = Status::Ok();
  }
  const TaskState state = result.state;
  recorder_.Event(id, state == TaskState::kFailed ? TimelineKind::kFailed : TimelineKind::kCancelled, Now());
  recorder_.SetState(id, state);
  recorder_.UpdateStats([&](SchedulerStats& s) { ++(state == TaskState::kFailed ? s.failed : s.cancelled); });
  result.durable_key = durable_key;
  if (Result<TaskMetrics> m = recorder_.Metrics(id); m.ok()) result.metrics = *m;
  if (callbacks.on_state) outbox_.push_back([cb = callbacks.on_state, id, state] { cb(id, state); });
  if (callbacks.on_done) outbox_.push_back([cb = callbacks.on_done, id, result] { cb(id, result); });
  return state;
}

void SchedulerCore::Enqueue(TaskId id, PreparedTask prepared, int32_t max_tokens, std::optional<TaskJournal> journal) {
  auto task = std::make_unique<Task>();
  task->id = id;
  task->durable_key = prepared.request.durable_key;
  task->journal = std::move(journal);
  task->tier = prepared.request.tier;
  task->ticket = next_ticket_++;
  task->callbacks = std::move(prepared.request.callbacks);
  task->max_tokens = max_tokens;
  task->spec = std::move(prepared.spec);
  task->prompt = std::move(prepared.prompt);
  prepared.stop.max_tokens = max_tokens;
  // The preparer checked these options, and a smaller positive max_tokens is as valid.
  task->stop.emplace(StopChecker::Create(std::move(prepared.stop)).value());
  if (Result<TaskMetrics> m = recorder_.Metrics(id); m.ok()) task->submit_time = m->submit_time;
  recorder_.SetPromptTokens(id, static_cast<int32_t>(task->spec.shared_prefix.size() + task->prompt.size()));
  if (governor_.MayRun(task->tier)) {
    queue_.Push(id, KeyFor(*task));
  } else {
    held_.insert(id);
  }
  tasks_.emplace(id, std::move(task));
}

QueueKey SchedulerCore::KeyFor(const Task& task) const {
  if (options_.queue_policy == QueuePolicy::kFifo) return {Tier::kForegroundChat, task.ticket};
  return {task.tier, task.ticket};
}

bool SchedulerCore::RunsToCompletion() const {
  return options_.queue_policy == QueuePolicy::kFifo || options_.queue_policy == QueuePolicy::kPriorityNoPreempt;
}

Task* SchedulerCore::Find(TaskId id) {
  auto it = tasks_.find(id);
  return it == tasks_.end() ? nullptr : it->second.get();
}

Status SchedulerCore::Cancel(TaskId id) {
  Task* task = Find(id);
  if (task == nullptr) {
    const std::optional<TaskState> state = recorder_.State(id);
    if (!state && !recorder_.Registered(id)) return NotFound("unknown task " + std::to_string(id));
    return InvalidArgument("task " + std::to_string(id) + " already finished" +
                           (state ? std::string(" (") + TaskStateName(*state) + ")" : std::string()));
  }
  Finish(*task, TaskState::kCancelled, Status::Ok(), StopReason::kNone);
  Deliver();
  return Status::Ok();
}

Status SchedulerCore::OnLifecycleEvent(LifecycleEvent event) {
  VALET_RETURN_IF_ERROR(governor_.OnLifecycleEvent(event));
  TryJournalsAgain();  // the app may have freed space meanwhile
  recorder_.UpdateStats([&](SchedulerStats& s) { s.lifecycle = governor_.state(); });
  ReleaseHeld();
  if (governor_.state() == LifecycleState::kDestroyed) ParkEverythingToDisk();
  // In the background the process may be killed at any moment: what durable
  // tasks generated so far goes to the device now.
  if (event == LifecycleEvent::kOnStop) {
    CheckpointAll(FileSync::kFsync);
    SyncJournals();
  }
  // Back in front of the user: a trim's reductions end, and the chat's
  // system prompt is cached again before the user types.
  if (event == LifecycleEvent::kOnStart) {
    if (trimmed_) (void)RestorePool();
    WarmForegroundPrefix();
  }
  Deliver();
  return Status::Ok();
}

Status SchedulerCore::OnThermalStatus(ThermalStatus status, float headroom) {
  VALET_RETURN_IF_ERROR(governor_.OnThermalStatus(status, headroom));
  recorder_.UpdateStats([&](SchedulerStats& s) { s.thermal = governor_.thermal_status(); });
  ReleaseHeld();
  Deliver();
  return Status::Ok();
}

Status SchedulerCore::OnPowerState(const PowerState& power) {
  VALET_RETURN_IF_ERROR(governor_.OnPowerState(power));
  recorder_.UpdateStats([&](SchedulerStats& s) { s.power = governor_.power(); });
  ReleaseHeld();
  Deliver();
  return Status::Ok();
}

void SchedulerCore::ConsumerCaughtUp(TaskId id) {
  if (behind_.erase(id) == 0) return;
  Task* task = Find(id);
  if (task == nullptr) return;
  if (governor_.MayRun(task->tier)) {
    queue_.Push(id, KeyFor(*task));
  } else {
    Hold(*task);
  }
}

void SchedulerCore::ReleaseHeld() {
  for (TaskId id : held_) {
    Task* task = Find(id);
    if (task != nullptr) queue_.Push(id, KeyFor(*task));
  }
  held_.clear();
}

void SchedulerCore::ParkEverythingToDisk() {
  std::vector<Task*> open;
  for (auto& [id, task] : tasks_) {
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

size_t SchedulerCore::EstimateBytesNeeded(const Task& incoming) {
  if (kv_bytes_per_token_ == 0) {
    for (auto& [id, task] : tasks_) {
      if (!task->seq_open) continue;
      Result<SequenceInfo> info = engine_.Info(task->seq);
      if (!info.ok()) continue;
      const int32_t own = info->n_cached - info->n_shared;
      if (own > 0 && info->own_kv_bytes > 0) {
        kv_bytes_per_token_ = info->own_kv_bytes / static_cast<size_t>(own);
        break;
      }
    }
    if (kv_bytes_per_token_ == 0) return 0;  // nothing learned yet: assume room
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
  const size_t need = static_cast<size_t>(std::max<int64_t>(tokens, 0)) * kv_bytes_per_token_;
  return need > free_bytes ? need - free_bytes : 0;
}

void SchedulerCore::Park(Task& task, ParkReason reason, size_t bytes_needed, const Task* cause) {
  const ParkKind kind = preemption_.Decide(engine_, {task.seq, reason, bytes_needed});
  // A durable task's KV is about to leave the pool: a copy goes to disk first.
  if (kind != ParkKind::kResident) Checkpoint(task, FileSync::kNone);
  Result<ParkReport> report = engine_.Park(task.seq, kind);
  // A snapshot the store cannot take: keep the KV, unless memory must be
  // freed, in which case it is dropped down to the prefix (recomputed later).
  const bool must_free = reason == ParkReason::kPressure || reason == ParkReason::kTrim;
  const ParkKind fallback = must_free ? ParkKind::kPartial : ParkKind::kResident;
  if (!report.ok() && kind != fallback) report = engine_.Park(task.seq, fallback);
  if (!report.ok()) {
    Finish(task, TaskState::kFailed, report.status(), StopReason::kNone);
    return;
  }
  task.active = false;
  task.park_kind = report->kind;
  const double now = Now();
  recorder_.Event(task.id, TimelineKind::kParked, now, report->kind, report->bytes, report->tokens_dropped);
  const bool preempted = reason == ParkReason::kPreempted;
  // Preemption latency is measured for arrivals: the cause has not started yet.
  const bool arrival = preempted && cause != nullptr && cause->state == TaskState::kQueued;
  recorder_.UpdateStats([&](SchedulerStats& s) {
    ++s.parks_by_kind[static_cast<size_t>(report->kind)];
    s.park_bytes += report->bytes;
    s.busy_seconds += report->seconds;
    s.busy_seconds_by_tier[static_cast<size_t>(task.tier)] += report->seconds;
    s.led_seconds_by_tier[static_cast<size_t>(task.tier)] += report->seconds;
    if (preempted) ++s.preemptions;
    if (arrival) s.preemption_latencies.push_back(now - cause->submit_time);
  });
  recorder_.SetParkCause(task.id, CauseOf(reason));
  SetState(task, TaskState::kParked);
}

void SchedulerCore::SetState(Task& task, TaskState state) {
  if (task.state == state) return;
  task.state = state;
  recorder_.SetState(task.id, state);
  if (task.callbacks.on_state) {
    outbox_.push_back([cb = task.callbacks.on_state, id = task.id, state] { cb(id, state); });
  }
}

void SchedulerCore::Finish(Task& task, TaskState state, Status status, StopReason reason) {
  // The app's cancel wins over any other end (AppHooks). A durable task's
  // end is journaled first: one the journal cannot take has not happened
  // yet, so the task waits unsettled, and the app may still cancel it.
  const bool durable = task.journal.has_value();
  if (durable && hooks_.cancel_requested && hooks_.cancel_requested(task.id)) state = TaskState::kCancelled;
  if (!JournalEnd(task, state, status, reason)) return WaitForJournal(task);
  if (hooks_.settle_end && hooks_.settle_end(task.id)) {
    // A cancel that came while the end was being written: forgotten after all.
    if (durable && state != TaskState::kCancelled) {
      (void)durable_.RemoveJournal(task.durable_key).ok();
    }
    state = TaskState::kCancelled;
  }
  if (state == TaskState::kCancelled) {
    status = Status::Ok();
    reason = StopReason::kNone;
  }
  if (task.seq_open) {
    // The task is over either way; a close error only leaks engine state.
    (void)engine_.CloseSequence(task.seq).ok();
    task.seq_open = false;
    task.active = false;
  }
  queue_.Erase(task.id);
  held_.erase(task.id);
  behind_.erase(task.id);
  journal_waiting_.erase(task.id);
  const TimelineKind kind = state == TaskState::kDone        ? TimelineKind::kDone
                            : state == TaskState::kCancelled ? TimelineKind::kCancelled
                                                             : TimelineKind::kFailed;
  recorder_.Event(task.id, kind, Now());
  recorder_.UpdateStats([&](SchedulerStats& s) {
    if (state == TaskState::kDone) ++s.done;
    if (state == TaskState::kCancelled) ++s.cancelled;
    if (state == TaskState::kFailed) ++s.failed;
  });
  SetState(task, state);
  TaskResult result;
  result.state = state;
  result.status = std::move(status);
  result.stop_reason = reason;
  result.tokens = std::move(task.tokens);
  result.text = std::move(task.text);
  result.logprobs = std::move(task.logprobs);
  result.durable_key = task.durable_key;
  if (Result<TaskMetrics> m = recorder_.Metrics(task.id); m.ok()) result.metrics = *m;
  if (task.callbacks.on_done) {
    outbox_.push_back([cb = task.callbacks.on_done, id = task.id, r = std::move(result)] { cb(id, r); });
  }
  if (last_lead_ == task.id) last_lead_ = 0;
  tasks_.erase(task.id);  // `task` dies here
}

void SchedulerCore::Deliver() {
  if (delivering_) return;  // a callback re-entered: the outer loop delivers
  delivering_ = true;
  while (!outbox_.empty()) {
    std::vector<std::function<void()>> batch;
    batch.swap(outbox_);
    for (auto& notify : batch) notify();
  }
  delivering_ = false;
}

int64_t SchedulerCore::RunUntilIdle(int64_t max_steps) {
  int64_t steps = 0;
  while ((max_steps < 0 || steps < max_steps) && RunOneStep()) ++steps;
  return steps;
}

}  // namespace valet
