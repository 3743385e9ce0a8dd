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
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "durable/task_durability.h"
#include "engine/engine_interface.h"
#include "sched/batch_policy.h"
#include "sched/governor.h"
#include "sched/preemption_controller.h"
#include "sched/recorder.h"
#include "sched/task.h"
#include "sched/task_admission.h"
#include "sched/task_preparer.h"
#include "sched/task_queue.h"
#include "sched/trim_policy.h"
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
  // journaled if durable, registered) on the submitting thread. A task too large for the KV pool even alone ends
  // FAILED here, with on_done called (and its journal's Done record), and the
  // error is returned.
  Status Admit(TaskId id, PreparedTask prepared, std::optional<TaskJournal> journal);
  // NotFound for an unknown id, InvalidArgument for a finished task. A
  // cancelled durable task's journal is removed.
  Status Cancel(TaskId id);
  // Durable tasks (docs/durable.md). Recover reads SchedulerOptions::durable_dir
  // and resumes every unfinished task found there (with callbacks_for's
  // callbacks, if given) where its journal ends; ended ones wait for Ack,
  // which removes a journal (NotFound when there is none, InvalidArgument
  // while its task runs). DetachJournals lets every live task go on without
  // its journal: the scheduler is stopping, and what the journals hold is
  // for the next one to recover.
  Result<RecoveryReport> Recover(const std::function<TaskCallbacks(const RecoveredTask&)>& callbacks_for = {});
  Status Ack(const std::string& durable_key);
  void DetachJournals();
  // How opening SchedulerOptions::durable_dir went (common/private_dir.h): OK,
  // or why durable tasks are unavailable here (their calls answer it).
  // InvalidArgument when the directory was refused (a link, another user's,
  // writable by others), which Scheduler::Create fails on.
  const Status& durable_dir_status() const { return durable_.dir_status(); }
  // Writes what journals could not take (ParkCause::kJournalIo); a task whose
  // journal takes it goes on (or ends, if its end was what waited). Also
  // tried on every lifecycle event and after every durable write that
  // succeeds; never on a timer.
  void RetryJournals();
  Status OnLifecycleEvent(LifecycleEvent event);
  // Heat caps from the budget table's thermal column; tiers it parks wait in
  // held_ like state-capped ones and come back on the next status change.
  Status OnThermalStatus(ThermalStatus status, float headroom);
  // The budget table's power column: tiers the battery stops wait in held_
  // (ParkCause::kPower) and come back when a report lets them run.
  Status OnPowerState(const PowerState& power);
  // docs/memory.md. A trim's reductions last until the next ON_START or
  // SetMemoryBudgets; work that needs room meanwhile grows the pool back.
  Status OnTrimMemory(TrimLevel level);
  Status SetMemoryBudgets(const MemoryBudgets& budgets);
  const MemoryBudgets& memory_budgets() const { return budgets_; }

  // Flags another thread raises when a task arrives that may preempt: under
  // kValet a running step of a lower tier then stops between layers instead
  // of finishing its chunk (the step is redone later). nullptr: never abort.
  // `stop` stops a step of any tier, under any policy: the scheduler is
  // stopping (whoever raises it raises the other two as well).
  struct ArrivalSignals {
    const std::atomic<bool>* chat = nullptr;                // a foreground chat arrived
    const std::atomic<bool>* chat_or_suggestion = nullptr;  // a chat or an inline suggestion arrived
    const std::atomic<bool>* stop = nullptr;
  };
  void set_arrival_signals(ArrivalSignals signals) { arrivals_ = signals; }

  // What the threaded Scheduler settles with the app's threads; unset, neither
  // applies.
  struct AppHooks {
    // Asked before a task runs: true holds it (parked) until
    // ConsumerCaughtUp(id), its callbacks having fallen behind.
    std::function<bool(TaskId)> consumer_behind;
    // When a task ends: true when the app's cancel came first, which makes
    // the end CANCELLED whatever ended it. Either way the end is settled
    // from then on.
    std::function<bool(TaskId)> settle_end;
    // Whether the app has asked to cancel the task, settling nothing: a
    // durable task's end is journaled before it is settled.
    std::function<bool(TaskId)> cancel_requested;
  };
  void set_app_hooks(AppHooks hooks) { hooks_ = std::move(hooks); }
  // A held task's consumer has caught up: it may run again.
  void ConsumerCaughtUp(TaskId id);
  // Replaces write(2) for durable tasks' journals (the seam a full disk is
  // tested through); before the first durable task.
  void set_journal_write_for_testing(JournalWriteFn write) { durable_.set_journal_write_for_testing(std::move(write)); }
  // Gives back what the engine lent (a trimmed pool): after it, destroying
  // this object no longer touches the engine.
  void ReleaseEngine() { (void)RestorePool(); }

  // Runs one engine step; false when nothing is runnable (idle).
  bool RunOneStep();
  // Steps until idle or max_steps (< 0: no limit); returns the steps run.
  int64_t RunUntilIdle(int64_t max_steps = -1);

  bool HasRunnableWork() const { return !queue_.empty(); }
  size_t live_tasks() const { return tasks_.size(); }
  LifecycleState lifecycle_state() const { return governor_.state(); }
  double Now() const { return clock_(); }
  Recorder& recorder() { return recorder_; }
  const Recorder& recorder() const { return recorder_; }
  const Governor& governor() const { return governor_; }
  // Immutable after construction, so any thread may prepare tasks with it.
  const TaskPreparer& preparer() const { return preparer_; }
  // The one admission path (prepare, journal, register); any thread.
  const TaskAdmission& admission() const { return admission_; }
  const ChatRenderer& chat() const { return preparer_.chat(); }
  const BatchPolicy& batch_policy() const { return batch_; }

 private:
  struct StepPlan {
    std::vector<Task*> tasks;  // parallel to items
    std::vector<StepItem> items;
    std::vector<StepItemKind> kinds;
  };

  // The task's max_tokens if the pool holds it alone (or for a task without
  // a limit, the most that fit); ResourceExhausted otherwise.
  Result<int32_t> FitPool(const PreparedTask& task) const;
  void Enqueue(TaskId id, PreparedTask prepared, int32_t max_tokens, std::optional<TaskJournal> journal = {});
  // Ends a registered task that never ran: FAILED (CANCELLED if the app's
  // cancel came first, AppHooks::settle_end), through its callbacks; returns which.
  TaskState FailRegistered(TaskId id, const TaskCallbacks& callbacks, const Status& status, const std::string& durable_key);
  // Registers an unfinished journaled task (r.id) and enqueues it where its
  // journal ends; one it cannot resume ends FAILED (r.state, r.error).
  void ResumeJournaled(JournalContents& contents,
                       const std::function<TaskCallbacks(const RecoveredTask&)>& callbacks_for, RecoveredTask& r);
  // Feeds a recovered task the tokens it had generated; false if they ended it.
  bool Replay(Task& task, const std::vector<int32_t>& tokens);
  // Appends to, or ends, a task's journal. A durable task never reports what
  // its journal cannot back: when a write fails, what it lacks is kept
  // (Task::unjournaled) and the task waits, parked, for a retry to write it;
  // JournalEnd is then false and the task does not end yet.
  void JournalToken(Task& task, int32_t token, const std::array<uint64_t, 4>& rng);
  [[nodiscard]] bool JournalEnd(Task& task, TaskState state, const Status& status, StopReason reason);
  // Writes the task's unjournaled tokens, then its end (synced).
  Status FlushJournal(Task& task);
  void WaitForJournal(Task& task);
  // RetryJournals without delivering: callable mid-step.
  void TryJournalsAgain();
  // Why a task that is not the lead leaves the engine, if something holds it.
  std::optional<ParkReason> HoldReason(TaskId id) const;
  // Into held_ (its tier may not run now), with the cause the app is told.
  void Hold(const Task& task);
  void SyncJournals();
  // Brings the foreground chat's shared prefix back into the prefix cache (a
  // prefill without a task) if memory pressure took it; on the way back to
  // the foreground, before the user's next turn needs it.
  void WarmForegroundPrefix();
  // Writes the KV checkpoint of a durable task (of every one) that has
  // computed more since its last; a no-op where the engine cannot export.
  void Checkpoint(Task& task, FileSync sync);
  void CheckpointAll(FileSync sync);
  // A recovered task's sequence, just opened, takes its checkpoint's KV.
  void RestoreCheckpoint(Task& task);
  Task* Find(TaskId id);

  // The queue key: (tier, ticket), or (one tier, ticket) under kFifo.
  QueueKey KeyFor(const Task& task) const;
  // kFifo and kPriorityNoPreempt: a started task keeps the engine until done.
  bool RunsToCompletion() const;
  // Moves a task whose consumer is behind out of the queue; true if it did.
  bool HoldIfConsumerBehind(Task& task);
  Task* PickLead();
  void ParkAllRunning(ParkReason reason);
  std::vector<Task*> PlanRiders(const Task& lead);
  void DisplaceOthers(const Task& lead, const std::vector<Task*>& riders);
  // Whether the lead can run: kNoRoom leaves it waiting (queued or parked)
  // until the app or finishing work changes the memory picture.
  enum class Activation { kReady, kFinished, kNoRoom };
  // `keep`: tasks that must not be evicted to make room.
  Activation Activate(Task& task, const std::vector<const Task*>& keep);
  Activation OpenSequence(Task& task, const std::vector<const Task*>& keep);
  Activation ResumeTask(Task& task, const std::vector<const Task*>& keep);
  void ApplyThreads(Tier tier);
  // Lends the engine `flag` for one step. The flag belongs to this scheduler;
  // the engine may outlive it.
  struct ScopedAbortFlag {
    ScopedAbortFlag(EngineInterface& engine, const std::atomic<bool>* flag) : engine(engine) {
      engine.SetAbortFlag(flag);
    }
    ~ScopedAbortFlag() { engine.SetAbortFlag(nullptr); }
    ScopedAbortFlag(const ScopedAbortFlag&) = delete;
    ScopedAbortFlag& operator=(const ScopedAbortFlag&) = delete;
    EngineInterface& engine;
  };
  Result<StepResult> RunStep(Task& lead, std::vector<Task*>& riders, StepPlan& plan);
  void OnStepError(const StepPlan& plan, const Status& status);
  void BuildItems(Task& lead, const std::vector<Task*>& riders, StepPlan& plan) const;
  // The task's next item: a recompute or prompt chunk of at most `limit`
  // tokens, or its pending decode token.
  StepItem NextItem(Task& task, int32_t limit, StepItemKind* kind) const;
  void AddItem(Task& task, const StepItem& item, StepItemKind kind, StepPlan& plan) const;

  // QueuePolicy::kBatchAll (scheduler_batch_all.cpp).
  bool RunBatchAllStep();
  std::vector<Task*> AdmitBatchMembers();
  void BuildBatchAllItems(const std::vector<Task*>& members, StepPlan& plan) const;
  Result<StepResult> RunBatchAll(std::vector<Task*>& members, StepPlan& plan);
  void ApplyStep(StepPlan& plan, StepResult& result);
  void OnToken(Task& task, StepOutput& output, double now);
  // Names the tokens, queues on_logprobs and keeps them for the result.
  void DeliverLogprobs(Task& task, TokenLogprobs logprobs);
  // Prompt tokens count toward the tier's budgets at prompt_token_weight.
  void ChargePrompt(Task& task, int32_t tokens);
  void EndTurnIfDue(Task& lead);

  void Park(Task& task, ParkReason reason, size_t bytes_needed, const Task* cause);
  // Frees pool memory for the work in `keep`, cheapest first: park a
  // resident task, drop the shared prefix a parked task still holds, drop
  // unused cached prefixes, grow a trimmed pool back. False when none is left.
  bool RelievePressure(const std::vector<const Task*>& keep, size_t bytes_needed);
  bool ParkResidentVictim(const std::vector<const Task*>& keep, size_t bytes_needed);
  bool DropParkedPrefix(const std::vector<const Task*>& keep);
  bool EvictFully(Task& task);
  bool RestorePool();
  // Pool bytes a task of `tokens` (shared prefix, prompt, max_tokens) needs to run alone.
  size_t BytesAlone(int64_t tokens) const;
  // The tokens of the largest live task, as BytesAlone counts them.
  int64_t LargestLiveTask() const;
  // Parked-resident tasks lose their KV down to the shared prefix.
  void EvictParked();
  // Partially evicted tasks drop their shared-prefix reference too (full).
  void DropEvictedPrefixes();
  void ShrinkPool();
  void ParkEverythingToDisk();
  size_t EstimateBytesNeeded(const Task& incoming);

  void SetState(Task& task, TaskState state);
  void Finish(Task& task, TaskState state, Status status, StopReason reason);
  void ReleaseHeld();
  void Deliver();

  EngineInterface& engine_;
  SchedulerOptions options_;
  std::function<double()> clock_;
  Recorder recorder_;
  TaskPreparer preparer_;
  Governor governor_;
  PreemptionController preemption_;
  BatchPolicy batch_;
  TaskQueue queue_;
  std::unordered_map<TaskId, std::unique_ptr<Task>> tasks_;
  std::unordered_set<TaskId> held_;  // over their tier's state cap until a lifecycle event
  std::unordered_set<TaskId> behind_;  // waiting for their consumer (AppHooks::consumer_behind)
  std::unordered_set<TaskId> journal_waiting_;  // waiting for their journal (Task::waits_for_journal)
  bool retrying_journals_ = false;
  AppHooks hooks_;
  uint64_t next_ticket_ = 1;
  TaskId last_lead_ = 0;
  int current_threads_ = -1;
  size_t kv_bytes_per_token_ = 0;  // learned from the engine's sequence info
  std::vector<std::function<void()>> outbox_;
  bool delivering_ = false;
  ArrivalSignals arrivals_;
  MemoryBudgets budgets_;  // as the app configured them
  bool trimmed_ = false;   // the engine runs below budgets_ after a trim
  // The shared prefix (system prompt) of the last foreground chat, computed
  // again at ON_START if it was given away in the background.
  std::vector<int32_t> foreground_prefix_;
  // Durable tasks' files: their directory, its budget, journals and checkpoints.
  TaskDurability durable_;
  // Prepare, journal, register: for Submit and the threaded scheduler's.
  TaskAdmission admission_;
};

}  // namespace valet
