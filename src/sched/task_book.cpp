// TaskBook: the live tasks, where each waits, their states and ends.
#include "sched/task_book.h"

#include <utility>

#include "sched/task_journaling.h"

namespace valet {

TaskState TaskBook::FailRegistered(TaskId id, const TaskCallbacks& callbacks, const Status& status,
                                        const std::string& durable_key) {
  TaskResult result;
  result.state = TaskState::kFailed;
  result.status = status;
  if (s_.hooks.settle_end && s_.hooks.settle_end(id)) {
    result.state = TaskState::kCancelled;
    result.status = Status::Ok();
  }
  const TaskState state = result.state;
  s_.recorder.Event(id, state == TaskState::kFailed ? TimelineKind::kFailed : TimelineKind::kCancelled, s_.Now());
  s_.recorder.SetState(id, state);
  s_.recorder.UpdateStats([&](SchedulerStats& s) { ++(state == TaskState::kFailed ? s.failed : s.cancelled); });
  result.durable_key = durable_key;
  if (Result<TaskMetrics> m = s_.recorder.Metrics(id); m.ok()) result.metrics = *m;
  if (callbacks.on_state) s_.outbox.push_back([cb = callbacks.on_state, id, state] { cb(id, state); });
  if (callbacks.on_done) s_.outbox.push_back([cb = callbacks.on_done, id, result] { cb(id, result); });
  return state;
}

void TaskBook::Enqueue(TaskId id, PreparedTask prepared, int32_t max_tokens, std::optional<TaskJournal> journal) {
  auto task = std::make_unique<Task>();
  task->id = id;
  task->durable_key = prepared.request.durable_key;
  task->journal = std::move(journal);
  task->tier = prepared.request.tier;
  task->ticket = s_.next_ticket++;
  task->callbacks = std::move(prepared.request.callbacks);
  task->max_tokens = max_tokens;
  task->spec = std::move(prepared.spec);
  task->prompt = std::move(prepared.prompt);
  task->tool_use = std::move(prepared.tool_use);
  prepared.stop.max_tokens = max_tokens;
  // The preparer checked these options, and a smaller positive max_tokens is as valid.
  task->stop.emplace(StopChecker::Create(std::move(prepared.stop)).value());
  if (Result<TaskMetrics> m = s_.recorder.Metrics(id); m.ok()) task->submit_time = m->submit_time;
  s_.recorder.SetPromptTokens(id, static_cast<int32_t>(task->spec.shared_prefix.size() + task->prompt.size()));
  if (s_.governor.MayRun(task->tier)) {
    s_.queue.Push(id, KeyFor(*task));
  } else {
    s_.held.insert(id);
  }
  s_.tasks.emplace(id, std::move(task));
}

QueueKey TaskBook::KeyFor(const Task& task) const {
  if (s_.options.queue_policy == QueuePolicy::kFifo) return {Tier::kForegroundChat, task.ticket};
  return {task.tier, task.ticket};
}

bool TaskBook::RunsToCompletion() const {
  return s_.options.queue_policy == QueuePolicy::kFifo || s_.options.queue_policy == QueuePolicy::kPriorityNoPreempt;
}

Task* TaskBook::Find(TaskId id) {
  auto it = s_.tasks.find(id);
  return it == s_.tasks.end() ? nullptr : it->second.get();
}

void TaskBook::ConsumerCaughtUp(TaskId id) {
  if (s_.behind.erase(id) == 0) return;
  Task* task = Find(id);
  if (task == nullptr) return;
  if (s_.governor.MayRun(task->tier)) {
    s_.queue.Push(id, KeyFor(*task));
  } else {
    Hold(*task);
  }
}

void TaskBook::ReleaseHeld() {
  for (TaskId id : s_.held) {
    Task* task = Find(id);
    if (task != nullptr) s_.queue.Push(id, KeyFor(*task));
  }
  s_.held.clear();
}

void TaskBook::SetState(Task& task, TaskState state) {
  if (task.state == state) return;
  task.state = state;
  s_.recorder.SetState(task.id, state);
  if (task.callbacks.on_state) {
    s_.outbox.push_back([cb = task.callbacks.on_state, id = task.id, state] { cb(id, state); });
  }
}

void TaskBook::Finish(Task& task, TaskState state, Status status, StopReason reason) {
  // The app's cancel wins over any other end (AppHooks). A durable task's
  // end is journaled first: one the journal cannot take has not happened
  // yet, so the task waits unsettled, and the app may still cancel it.
  const bool durable = task.journal.has_value();
  if (durable && s_.hooks.cancel_requested && s_.hooks.cancel_requested(task.id)) state = TaskState::kCancelled;
  if (!journals_.JournalEnd(task, state, status, reason)) return journals_.WaitForJournal(task);
  if (s_.hooks.settle_end && s_.hooks.settle_end(task.id)) {
    // A cancel that came while the end was being written: forgotten after all.
    if (durable && state != TaskState::kCancelled) {
      (void)s_.durable.RemoveJournal(task.durable_key).ok();
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
  s_.queue.Erase(task.id);
  s_.held.erase(task.id);
  s_.behind.erase(task.id);
  s_.journal_waiting.erase(task.id);
  const TimelineKind kind = state == TaskState::kDone        ? TimelineKind::kDone
                            : state == TaskState::kCancelled ? TimelineKind::kCancelled
                                                             : TimelineKind::kFailed;
  s_.recorder.Event(task.id, kind, s_.Now());
  s_.recorder.UpdateStats([&](SchedulerStats& s) {
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
  if (state == TaskState::kDone && task.tool_use) {
    ToolAnswer answer = task.tool_use->Read(result.text);
    result.content = std::move(answer.content);
    result.tool_calls = std::move(answer.calls);
  } else {
    result.content = result.text;
  }
  result.logprobs = std::move(task.logprobs);
  result.durable_key = task.durable_key;
  if (Result<TaskMetrics> m = s_.recorder.Metrics(task.id); m.ok()) result.metrics = *m;
  if (task.callbacks.on_done) {
    s_.outbox.push_back([cb = task.callbacks.on_done, id = task.id, r = std::move(result)] { cb(id, r); });
  }
  if (s_.last_lead == task.id) s_.last_lead = 0;
  s_.tasks.erase(task.id);  // `task` dies here
}

void TaskBook::Deliver() {
  if (s_.delivering) return;  // a callback re-entered: the outer loop delivers
  s_.delivering = true;
  while (!s_.outbox.empty()) {
    std::vector<std::function<void()>> batch;
    batch.swap(s_.outbox);
    for (auto& notify : batch) notify();
  }
  s_.delivering = false;
}

bool TaskBook::HoldIfConsumerBehind(Task& task) {
  if (!s_.hooks.consumer_behind || !s_.hooks.consumer_behind(task.id)) return false;
  s_.queue.Erase(task.id);
  s_.behind.insert(task.id);
  s_.recorder.UpdateStats([](SchedulerStats& s) { ++s.consumer_waits; });
  return true;
}

void TaskBook::Hold(const Task& task) {
  s_.held.insert(task.id);  // back in the queue on the next lifecycle, thermal or power event
  // A parked task now waits for its budget or the battery, whatever parked it.
  s_.recorder.SetParkCause(task.id, CauseOf(*HoldReason(task.id)));
}

std::optional<ParkReason> TaskBook::HoldReason(TaskId id) const {
  if (s_.journal_waiting.count(id) != 0) return ParkReason::kJournalIo;
  if (s_.behind.count(id) != 0) return ParkReason::kConsumerBehind;
  if (s_.held.count(id) != 0) {
    const Task* task = s_.tasks.at(id).get();
    return s_.governor.PowerAllows(task->tier) ? ParkReason::kStateCap : ParkReason::kPower;
  }
  return std::nullopt;
}

}  // namespace valet
