// The scheduler as a synchronous, single-threaded state machine: submit,
// cancel, lifecycle events and RunOneStep() are called explicitly by one
// thread (the inference thread, or a test with the fake engine's virtual
// clock). Every decision is taken in one of those calls; there are no timers.
//
// RunOneStep: pick the lead (head of the (tier, ticket) heap whose tier is
// under its state cap), let the batch policy add riders, park every other
// running task (the preemption controller picks how), resume/open the lead,
// run one engine step (a prefill/recompute chunk or a decode token), deliver
// tokens, finish tasks, and rotate the lead when its turn is over.
//
// Starvation guard, precisely:
//  * work-conserving: whenever no task of a higher tier is runnable, the best
//    runnable lower-tier task runs (background progresses while foreground idles);
//  * equal tiers take turns: with turn_tokens T > 0, a task that generated T
//    tokens in its turn goes behind the other tasks of its tier;
//  * no ping-pong: a running task is parked only when a strictly higher tier
//    becomes runnable, its turn ended while an equal-tier task waits, its
//    tier hit its state cap, memory must be freed, or the app is destroyed.
//
// Callbacks are queued while the core changes state and delivered at the end
// of each public call, so a callback may call Submit/Cancel/OnLifecycleEvent.
//
// Its parts, over the state they share (SchedulerState): TaskBook (queue and
// admission: the live tasks, where each waits, their ends), StepRunner (the
// step), MemoryKeeper (memory and parking) and TaskJournaling (durable
// tasks); TaskAdmission is the one admission path, which the threaded
// Scheduler's Submit takes too. This class is their public face.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "sched/memory_keeper.h"
#include "sched/scheduler_state.h"
#include "sched/step_runner.h"
#include "sched/task_book.h"
#include "sched/task_journaling.h"
#include "valet/scheduler.h"

namespace valet {

class SchedulerCore {
 public:
  SchedulerCore(EngineInterface& engine, SchedulerOptions options);
  // Gives a trimmed pool back: the engine outlives this scheduler, and the
  // next one would otherwise take the trimmed size for the app's budget.
  ~SchedulerCore();
  SchedulerCore(const SchedulerCore&) = delete;
  SchedulerCore& operator=(const SchedulerCore&) = delete;

  // Admits (admission(): prepare, check the pool, journal, register) and
  // enqueues; errors leave no trace but the rejected counter.
  Result<TaskId> Submit(TaskRequest request);
  // For the threaded wrapper, which admitted the task (admission(): prepared,
  // journaled if durable, registered) on the submitting thread. A task too
  // large for the KV pool even alone ends FAILED here, with on_done called
  // (and its journal's Done record), and the error is returned.
  Status Admit(TaskId id, PreparedTask prepared, std::optional<TaskJournal> journal);
  // NotFound for an unknown id, InvalidArgument for a finished task. A
  // cancelled durable task's journal is removed.
  Status Cancel(TaskId id);
  // Durable tasks (docs/durable.md): Recover, Ack, DetachJournals, RetryJournals.
  TaskJournaling& journals() { return journals_; }
  // How opening SchedulerOptions::durable_dir went (common/private_dir.h): OK,
  // or why durable tasks are unavailable here (their calls answer it).
  // InvalidArgument when the directory was refused (a link, another user's,
  // writable by others), which Scheduler::Create fails on.
  const Status& durable_dir_status() const { return s_.durable.dir_status(); }
  // Replaces write(2) for durable tasks' journals (the seam a full disk is
  // tested through); before the first durable task.
  void set_journal_write_for_testing(JournalWriteFn write) {
    s_.durable.set_journal_write_for_testing(std::move(write));
  }
  Status OnLifecycleEvent(LifecycleEvent event);
  // Heat caps from the budget table's thermal column; tiers it parks wait
  // held like state-capped ones and come back on the next status change.
  Status OnThermalStatus(ThermalStatus status, float headroom);
  // The budget table's power column: tiers the battery stops wait held
  // (ParkCause::kPower) and come back when a report lets them run.
  Status OnPowerState(const PowerState& power);
  // docs/memory.md: OnTrimMemory, SetMemoryBudgets.
  MemoryKeeper& memory() { return memory_; }
  const MemoryBudgets& memory_budgets() const { return s_.budgets; }

  using ArrivalSignals = valet::ArrivalSignals;
  void set_arrival_signals(ArrivalSignals signals) { steps_.set_arrival_signals(signals); }
  using AppHooks = valet::AppHooks;
  void set_app_hooks(AppHooks hooks) { s_.hooks = std::move(hooks); }
  // A held task's consumer has caught up: it may run again.
  void ConsumerCaughtUp(TaskId id) { book_.ConsumerCaughtUp(id); }
  // Gives back what the engine lent (a trimmed pool): after it, destroying
  // this object no longer touches the engine.
  void ReleaseEngine() { (void)memory_.RestorePool(); }

  // Runs one engine step; false when nothing is runnable (idle).
  bool RunOneStep() { return steps_.RunOneStep(); }
  // Steps until idle or max_steps (< 0: no limit); returns the steps run.
  int64_t RunUntilIdle(int64_t max_steps = -1);

  bool HasRunnableWork() const { return !s_.queue.empty(); }
  size_t live_tasks() const { return s_.tasks.size(); }
  LifecycleState lifecycle_state() const { return s_.governor.state(); }
  double Now() const { return s_.Now(); }
  Recorder& recorder() { return s_.recorder; }
  const Recorder& recorder() const { return s_.recorder; }
  const Governor& governor() const { return s_.governor; }
  // Immutable after construction, so any thread may prepare tasks with it.
  const TaskPreparer& preparer() const { return s_.preparer; }
  // The one admission path (prepare, journal, register); any thread.
  const TaskAdmission& admission() const { return s_.admission; }

 private:
  SchedulerState s_;
  TaskBook book_;
  MemoryKeeper memory_;
  TaskJournaling journals_;
  StepRunner steps_;
};

}  // namespace valet
