// What the parts of SchedulerCore share: the live tasks, the queue, the
// tasks held back and why, the callbacks waiting to be delivered, the memory
// budgets, durable tasks' files and the admission path. SchedulerCore owns
// one; TaskBook (queue and admission), StepRunner (the step), MemoryKeeper
// (memory and parking) and TaskJournaling (durable tasks) work on it, on the
// inference thread only (admission, which any thread may use, excepted).
#pragma once

#include <atomic>
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
#include "valet/scheduler.h"

namespace valet {

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

struct SchedulerState {
  SchedulerState(EngineInterface& engine, SchedulerOptions options);
  SchedulerState(const SchedulerState&) = delete;
  SchedulerState& operator=(const SchedulerState&) = delete;

  double Now() const { return clock(); }

  EngineInterface& engine;
  SchedulerOptions options;
  std::function<double()> clock;
  Recorder recorder;
  TaskPreparer preparer;
  Governor governor;
  PreemptionController preemption;
  BatchPolicy batch;
  TaskQueue queue;
  std::unordered_map<TaskId, std::unique_ptr<Task>> tasks;
  std::unordered_set<TaskId> held;             // over their tier's state cap until a lifecycle event
  std::unordered_set<TaskId> behind;           // waiting for their consumer (AppHooks::consumer_behind)
  std::unordered_set<TaskId> journal_waiting;  // waiting for their journal (Task::waits_for_journal)
  AppHooks hooks;
  uint64_t next_ticket = 1;
  TaskId last_lead = 0;
  size_t kv_bytes_per_token = 0;  // learned from the engine's sequence info
  std::vector<std::function<void()>> outbox;
  bool delivering = false;
  MemoryBudgets budgets;  // as the app configured them
  bool trimmed = false;   // the engine runs below budgets after a trim
  // The shared prefix (system prompt) of the last foreground chat, computed
  // again at ON_START if it was given away in the background.
  std::vector<int32_t> foreground_prefix;
  // Durable tasks' files: their directory, its budget, journals and checkpoints.
  TaskDurability durable;
  // Prepare, journal, register: for Submit and the threaded scheduler's.
  TaskAdmission admission;
};

}  // namespace valet
