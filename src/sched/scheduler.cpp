// The threaded Scheduler: callers post commands to a mutex-protected inbox;
// the inference thread drains it between steps and drives SchedulerCore. It
// waits on a condition variable only when the core has nothing to run, for
// "a command or shutdown" - an event, never a timeout.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "sched/scheduler_core.h"
#include "valet/scheduler.h"

namespace valet {

struct Scheduler::Impl {
  enum class CommandKind { kSubmit, kCancel, kLifecycle };
  struct Command {
    CommandKind kind = CommandKind::kSubmit;
    TaskId id = 0;
    TaskRequest request;
    LifecycleEvent event = LifecycleEvent::kOnCreate;
  };

  Impl(EngineInterface& engine, SchedulerOptions options)
      : context_length(engine.context_length()), lifecycle(options.initial_state), core(engine, std::move(options)) {
    core.set_arrival_signals({&chat_arrived, &chat_or_suggestion_arrived});
  }

  void Loop();
  void Apply(Command& command);
  void TaskFinished();

  const int32_t context_length;
  mutable std::mutex mu;
  std::condition_variable work_cv;  // inbox non-empty or stop
  std::condition_variable idle_cv;  // outstanding reached 0
  std::deque<Command> inbox;
  // Raised by a chat (both) or suggestion (the second) Submit, cleared when
  // the inbox is drained: a lower-tier step running meanwhile stops between
  // layers.
  std::atomic<bool> chat_arrived{false};
  std::atomic<bool> chat_or_suggestion_arrived{false};
  bool stop = false;
  LifecycleState lifecycle;  // as of the last accepted event
  int64_t outstanding = 0;   // accepted tasks not yet finished
  SchedulerCore core;        // inference thread only (its recorder is thread-safe)
  std::thread thread;
};

void Scheduler::Impl::TaskFinished() {
  std::lock_guard<std::mutex> lock(mu);
  if (--outstanding == 0) idle_cv.notify_all();
}

void Scheduler::Impl::Apply(Command& command) {
  switch (command.kind) {
    case CommandKind::kSubmit:
      // A failure was reported through on_done (the task ended FAILED).
      (void)core.Admit(command.id, std::move(command.request)).ok();
      break;
    case CommandKind::kCancel:
      // Cancel was checked when posted; the task may have finished since.
      (void)core.Cancel(command.id).ok();
      break;
    case CommandKind::kLifecycle:
      // Validated in order when posted, so it applies in order here.
      (void)core.OnLifecycleEvent(command.event).ok();
      break;
  }
}

void Scheduler::Impl::Loop() {
  bool has_work = false;
  while (true) {
    std::deque<Command> batch;
    {
      std::unique_lock<std::mutex> lock(mu);
      work_cv.wait(lock, [&] { return stop || !inbox.empty() || has_work; });
      if (stop) return;
      batch.swap(inbox);
      // Every arrival that raised it is in `batch` now and will be planned.
      chat_arrived.store(false, std::memory_order_relaxed);
      chat_or_suggestion_arrived.store(false, std::memory_order_relaxed);
    }
    for (Command& command : batch) Apply(command);
    has_work = core.RunOneStep();
  }
}

Scheduler::Scheduler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Scheduler>> Scheduler::Create(EngineInterface& engine, SchedulerOptions options) {
  if (!(options.fill_max_cost_fraction >= 0.0)) return InvalidArgument("fill_max_cost_fraction must be >= 0");
  auto impl = std::make_unique<Impl>(engine, std::move(options));
  Impl* raw = impl.get();
  std::unique_ptr<Scheduler> scheduler(new Scheduler(std::move(impl)));
  raw->thread = std::thread([raw] { raw->Loop(); });
  return scheduler;
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->work_cv.notify_one();
  impl_->thread.join();
}

Result<TaskId> Scheduler::Submit(TaskRequest request) {
  if (Status s = ValidateRequest(request, impl_->context_length, impl_->core.chat()); !s.ok()) {
    impl_->core.recorder().UpdateStats([](SchedulerStats& st) { ++st.rejected; });
    return s;
  }
  Impl* impl = impl_.get();
  auto user_done = std::move(request.callbacks.on_done);
  request.callbacks.on_done = [impl, user_done](TaskId id, const TaskResult& result) {
    if (user_done) user_done(id, result);
    impl->TaskFinished();
  };
  TaskId id = 0;
  {
    // Registering under the inbox lock keeps id order equal to arrival order.
    std::lock_guard<std::mutex> lock(impl->mu);
    id = impl->core.recorder().Register(request.tier, impl->core.Now());
    ++impl->outstanding;
    Impl::Command command;
    command.kind = Impl::CommandKind::kSubmit;
    command.id = id;
    if (request.tier == Tier::kForegroundChat) impl->chat_arrived.store(true, std::memory_order_relaxed);
    if (request.tier <= Tier::kInlineSuggestion) {
      impl->chat_or_suggestion_arrived.store(true, std::memory_order_relaxed);
    }
    command.request = std::move(request);
    impl->inbox.push_back(std::move(command));
  }
  impl->work_cv.notify_one();
  return id;
}

Status Scheduler::Cancel(TaskId id) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    const std::optional<TaskState> state = impl_->core.recorder().State(id);
    if (!state) return NotFound("unknown task " + std::to_string(id));
    if (IsTerminal(*state)) {
      return InvalidArgument("task " + std::to_string(id) + " already finished (" + TaskStateName(*state) + ")");
    }
    Impl::Command command;
    command.kind = Impl::CommandKind::kCancel;
    command.id = id;
    impl_->inbox.push_back(std::move(command));
  }
  impl_->work_cv.notify_one();
  return Status::Ok();
}

Status Scheduler::OnLifecycleEvent(LifecycleEvent event) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    VALET_ASSIGN_OR_RETURN(LifecycleState next, NextLifecycleState(impl_->lifecycle, event));
    impl_->lifecycle = next;
    Impl::Command command;
    command.kind = Impl::CommandKind::kLifecycle;
    command.event = event;
    impl_->inbox.push_back(std::move(command));
  }
  impl_->work_cv.notify_one();
  return Status::Ok();
}

void Scheduler::WaitIdle() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->idle_cv.wait(lock, [&] { return impl_->outstanding == 0; });
}

LifecycleState Scheduler::lifecycle_state() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->lifecycle;
}

SchedulerStats Scheduler::Stats() const { return impl_->core.recorder().Stats(); }

Result<std::vector<TimelineEvent>> Scheduler::Timeline(TaskId id) const { return impl_->core.recorder().Timeline(id); }

Result<TaskMetrics> Scheduler::Metrics(TaskId id) const { return impl_->core.recorder().Metrics(id); }

std::string Scheduler::ChromeTraceJson() const { return impl_->core.recorder().ChromeTraceJson(); }

}  // namespace valet
