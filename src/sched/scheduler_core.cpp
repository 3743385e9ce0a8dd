// SchedulerCore: the public calls over its parts (scheduler_core.h).
#include "sched/scheduler_core.h"

#include <utility>

namespace valet {

SchedulerCore::SchedulerCore(EngineInterface& engine, SchedulerOptions options)
    : s_(engine, std::move(options)),
      book_(s_, journals_),
      memory_(s_, book_, journals_),
      journals_(s_, book_, memory_),
      steps_(s_, book_, memory_, journals_) {
  s_.recorder.UpdateStats([&](SchedulerStats& s) {
    s.lifecycle = s_.governor.state();
    s.power = s_.governor.power();
  });
}

SchedulerCore::~SchedulerCore() { (void)memory_.RestorePool(); }

Result<TaskId> SchedulerCore::Submit(TaskRequest request) {
  bool durable = false;
  AdmissionSteps steps;
  steps.fit = [this](const PreparedTask& prepared) { return memory_.FitPool(prepared); };
  steps.accept = [&](AdmittedTask task) {
    durable = task.journal.has_value();
    book_.Enqueue(task.id, std::move(task.prepared), task.max_tokens, std::move(task.journal));
  };
  Result<TaskId> id = s_.admission.Admit(std::move(request), steps);
  if (!id.ok()) return id;
  if (durable) journals_.TryJournalsAgain();  // its journal was just written: the disk takes writes
  book_.Deliver();
  return id;
}

Status SchedulerCore::Admit(TaskId id, PreparedTask prepared, std::optional<TaskJournal> journal) {
  Result<int32_t> max_tokens = memory_.FitPool(prepared);
  if (max_tokens.ok()) {
    const bool durable = journal.has_value();
    book_.Enqueue(id, std::move(prepared), *max_tokens, std::move(journal));
    if (durable) journals_.TryJournalsAgain();  // its journal was just written: the disk takes writes
    book_.Deliver();
    return Status::Ok();
  }
  // Found too large after an id was handed out: the task ends FAILED, visibly,
  // and a durable one's journal says so until the app acknowledges it (a
  // cancel that came first forgets it, as any cancel does).
  const TaskState state = book_.FailRegistered(id, prepared.request.callbacks, max_tokens.status(), prepared.request.durable_key);
  if (journal) {
    const Status written = state == TaskState::kCancelled
                               ? journal->Remove()
                               : journal->MarkDone({TaskState::kFailed, StopReason::kNone, max_tokens.status().message()});
    if (!written.ok()) s_.recorder.UpdateStats([](SchedulerStats& s) { ++s.journal_errors; });
  }
  book_.Deliver();
  return max_tokens.status();
}

Status SchedulerCore::Cancel(TaskId id) {
  Task* task = book_.Find(id);
  if (task == nullptr) {
    const std::optional<TaskState> state = s_.recorder.State(id);
    if (!state && !s_.recorder.Registered(id)) return NotFound("unknown task " + std::to_string(id));
    return InvalidArgument("task " + std::to_string(id) + " already finished" +
                           (state ? std::string(" (") + TaskStateName(*state) + ")" : std::string()));
  }
  book_.Finish(*task, TaskState::kCancelled, Status::Ok(), StopReason::kNone);
  book_.Deliver();
  return Status::Ok();
}

Status SchedulerCore::OnLifecycleEvent(LifecycleEvent event) {
  VALET_RETURN_IF_ERROR(s_.governor.OnLifecycleEvent(event));
  journals_.TryJournalsAgain();  // the app may have freed space meanwhile
  s_.recorder.UpdateStats([&](SchedulerStats& s) { s.lifecycle = s_.governor.state(); });
  book_.ReleaseHeld();
  if (s_.governor.state() == LifecycleState::kDestroyed) memory_.ParkEverythingToDisk();
  // In the background the process may be killed at any moment: what durable
  // tasks generated so far goes to the device now.
  if (event == LifecycleEvent::kOnStop) {
    journals_.CheckpointAll(FileSync::kFsync);
    journals_.SyncJournals();
  }
  // Back in front of the user: a trim's reductions end, and the chat's
  // system prompt is cached again before the user types.
  if (event == LifecycleEvent::kOnStart) {
    if (s_.trimmed) (void)memory_.RestorePool();
    memory_.WarmForegroundPrefix();
  }
  book_.Deliver();
  return Status::Ok();
}

Status SchedulerCore::OnThermalStatus(ThermalStatus status, float headroom) {
  VALET_RETURN_IF_ERROR(s_.governor.OnThermalStatus(status, headroom));
  s_.recorder.UpdateStats([&](SchedulerStats& s) { s.thermal = s_.governor.thermal_status(); });
  book_.ReleaseHeld();
  book_.Deliver();
  return Status::Ok();
}

Status SchedulerCore::OnPowerState(const PowerState& power) {
  VALET_RETURN_IF_ERROR(s_.governor.OnPowerState(power));
  s_.recorder.UpdateStats([&](SchedulerStats& s) { s.power = s_.governor.power(); });
  book_.ReleaseHeld();
  book_.Deliver();
  return Status::Ok();
}

int64_t SchedulerCore::RunUntilIdle(int64_t max_steps) {
  int64_t steps = 0;
  while ((max_steps < 0 || steps < max_steps) && steps_.RunOneStep()) ++steps;
  return steps;
}

}  // namespace valet
