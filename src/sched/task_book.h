// Queue and admission: the live tasks, where each waits (the queue, held
// back by its tier's cap, behind its consumer), their states and ends, and
// the callbacks that go out at the end of each public call. Part of
// SchedulerCore (sched/scheduler_state.h); inference thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sched/scheduler_state.h"

namespace valet {

class TaskJournaling;

class TaskBook {
 public:
  TaskBook(SchedulerState& state, TaskJournaling& journals) : s_(state), engine_(state.engine), journals_(journals) {}
  TaskBook(const TaskBook&) = delete;
  TaskBook& operator=(const TaskBook&) = delete;

  void Enqueue(TaskId id, PreparedTask prepared, int32_t max_tokens, std::optional<TaskJournal> journal = {});
  // Ends a registered task that never ran: FAILED (CANCELLED if the app's
  // cancel came first, AppHooks::settle_end), through its callbacks; returns which.
  TaskState FailRegistered(TaskId id, const TaskCallbacks& callbacks, const Status& status, const std::string& durable_key);
  Task* Find(TaskId id);
  // The queue key: (tier, ticket), or (one tier, ticket) under kFifo.
  QueueKey KeyFor(const Task& task) const;
  // kFifo and kPriorityNoPreempt: a started task keeps the engine until done.
  bool RunsToCompletion() const;
  // Moves a task whose consumer is behind out of the queue; true if it did.
  bool HoldIfConsumerBehind(Task& task);
  // A held task's consumer has caught up: it may run again.
  void ConsumerCaughtUp(TaskId id);
  // Why a task that is not the lead leaves the engine, if something holds it.
  std::optional<ParkReason> HoldReason(TaskId id) const;
  // Into held (its tier may not run now), with the cause the app is told.
  void Hold(const Task& task);
  // Everything held by its tier's cap goes back to the queue (a lifecycle,
  // thermal or power change decides again).
  void ReleaseHeld();
  void SetState(Task& task, TaskState state);
  // The task's end: journaled first if durable (one the journal cannot take
  // waits, parked), then settled with the app and reported.
  void Finish(Task& task, TaskState state, Status status, StopReason reason);
  // Runs the queued callbacks; a callback may re-enter the scheduler.
  void Deliver();

 private:
  SchedulerState& s_;
  EngineInterface& engine_;
  TaskJournaling& journals_;
};

}  // namespace valet
