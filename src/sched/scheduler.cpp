// The threaded Scheduler: callers post commands to a mutex-protected inbox;
// the inference thread drains it between steps and drives SchedulerCore. It
// waits on a condition variable only when the core has nothing to run, for
// "a command or stop" - an event, never a timeout.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "sched/scheduler_core.h"
#include "valet/scheduler.h"

namespace valet {

namespace {

// The scheduler (its Impl) whose inference thread this is, and the one whose
// Stop is cancelling on this thread: where its callbacks run. Thread ids are
// reused once a thread ends; these markers die with their thread.
thread_local const void* t_inference_of = nullptr;
thread_local const void* t_stopping = nullptr;

}  // namespace

struct Scheduler::Impl {
  enum class CommandKind { kSubmit, kCancel, kLifecycle, kThermal, kTrim, kCall };
  struct Command {
    CommandKind kind = CommandKind::kSubmit;
    TaskId id = 0;
    PreparedTask task;  // kSubmit
    std::optional<TaskJournal> journal;  // kSubmit: a durable task's, created by Submit
    LifecycleEvent event = LifecycleEvent::kOnCreate;
    ThermalStatus thermal = ThermalStatus::kNone;
    float headroom = -1.0f;
    TrimLevel trim = TrimLevel::kRunningModerate;
    std::function<void()> call;  // kCall: Call()'s work, which answers its waiting caller
  };

  Impl(EngineInterface& engine, SchedulerOptions options)
      : engine(engine),
        lifecycle(options.initial_state),
        core(engine, std::move(options)),
        budgets(core.memory_budgets()) {
    core.set_arrival_signals({&chat_arrived, &chat_or_suggestion_arrived, &stop_requested});
  }

  void Loop();
  void Apply(Command& command);
  // Queues a command for the inference thread and wakes it; false once the
  // scheduler is stopping (nothing would answer it then).
  bool Post(Command command) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (phase != Phase::kRunning) return false;
      inbox.push_back(std::move(command));
    }
    work_cv.notify_one();
    return true;
  }
  Status ApplyBudgets(const MemoryBudgets& budgets);
  // Runs fn on the inference thread (at once from a task callback) and
  // returns its result; Aborted once the scheduler is stopping.
  template <typename Fn>
  auto Call(Fn fn) -> decltype(fn());
  // On the inference thread: the core's Recover, with the recovered tasks
  // counted and tracked like submitted ones.
  Result<RecoveryReport> Recover(const std::function<TaskCallbacks(const RecoveredTask&)>& callbacks_for);
  // Wraps the task's callbacks to keep the per-tier counts and to finish
  // the task's bookkeeping after its on_done.
  void Track(TaskRequest& request);
  void NoteState(Tier tier, TaskState from, TaskState to);
  void TaskFinished(TaskId id, Tier tier, TaskState state);
  void SampleMemory();
  Status Stop(const std::string& reason);
  // Stop's second half: the inference thread has ended, so the core belongs
  // to the stopping thread.
  void CancelUnfinished();

  EngineInterface& engine;
  mutable std::mutex mu;
  std::condition_variable work_cv;  // inbox non-empty or stop
  std::condition_variable idle_cv;  // outstanding reached 0
  std::deque<Command> inbox;
  // Raised by a chat (both) or suggestion (the second) Submit, cleared when
  // the inbox is drained: a lower-tier step running meanwhile stops between
  // layers. Stop raises all three, under `mu` so the loop cannot clear them.
  std::atomic<bool> chat_arrived{false};
  std::atomic<bool> chat_or_suggestion_arrived{false};
  std::atomic<bool> stop_requested{false};
  enum class Phase { kRunning, kStopping, kStopped };
  Phase phase = Phase::kRunning;
  std::condition_variable stopped_cv;  // phase reached kStopped
  // The status message of the tasks Stop cancels. Written before the
  // inference thread is joined, read by callbacks on the stopping thread after.
  std::string stop_message;
  LifecycleState lifecycle;  // as of the last accepted event
  LifecycleHistory history = LifecycleHistory::kNoEventYet;
  int64_t outstanding = 0;   // accepted tasks not yet finished
  std::set<TaskId> unfinished;
  std::array<TierTaskCounts, kNumTiers> tier_counts{};
  MemoryStats memory;
  // Set after the inference thread has joined; read by callbacks that run
  // on the stopping thread from then on.
  bool cancelling_unfinished = false;
  SchedulerCore core;        // inference thread only (its recorder is thread-safe)
  MemoryBudgets budgets;     // as last set (guarded by mu)
  std::thread thread;
};

void Scheduler::Impl::Track(TaskRequest& request) {
  const Tier tier = request.tier;
  auto last = std::make_shared<TaskState>(TaskState::kQueued);
  auto user_state = std::move(request.callbacks.on_state);
  request.callbacks.on_state = [this, tier, last, user_state](TaskId id, TaskState state) {
    NoteState(tier, *last, state);
    *last = state;
    if (user_state) user_state(id, state);
  };
  auto user_done = std::move(request.callbacks.on_done);
  request.callbacks.on_done = [this, tier, last, user_done](TaskId id, const TaskResult& result) {
    if (user_done && cancelling_unfinished) {
      TaskResult cancelled = result;
      cancelled.status = Aborted(stop_message);
      user_done(id, cancelled);
    } else if (user_done) {
      user_done(id, result);
    }
    TaskFinished(id, tier, result.state);
  };
}

void Scheduler::Impl::NoteState(Tier tier, TaskState from, TaskState to) {
  if ((from == TaskState::kParked) == (to == TaskState::kParked)) return;
  std::lock_guard<std::mutex> lock(mu);
  tier_counts[static_cast<size_t>(tier)].parked += to == TaskState::kParked ? 1 : -1;
}

void Scheduler::Impl::TaskFinished(TaskId id, Tier tier, TaskState state) {
  std::lock_guard<std::mutex> lock(mu);
  TierTaskCounts& c = tier_counts[static_cast<size_t>(tier)];
  --c.active;
  if (state == TaskState::kDone) ++c.done;
  if (state == TaskState::kCancelled) ++c.cancelled;
  if (state == TaskState::kFailed) ++c.failed;
  unfinished.erase(id);
  if (--outstanding == 0) idle_cv.notify_all();
}

void Scheduler::Impl::SampleMemory() {
  const EngineMemory m = engine.memory();
  std::lock_guard<std::mutex> lock(mu);
  memory = {m.pool_used_bytes, m.pool_capacity_bytes, m.snapshot_ram_bytes, m.snapshot_disk_bytes};
}

Status Scheduler::Impl::Stop(const std::string& reason) {
  {
    if (t_inference_of == this || t_stopping == this) {
      return InvalidArgument("Stop called from a task callback of this scheduler: it would wait for its own thread");
    }
    std::unique_lock<std::mutex> lock(mu);
    if (phase != Phase::kRunning) {
      stopped_cv.wait(lock, [&] { return phase == Phase::kStopped; });
      return Status::Ok();
    }
    phase = Phase::kStopping;
    stop_message = reason;
    chat_arrived.store(true, std::memory_order_relaxed);
    chat_or_suggestion_arrived.store(true, std::memory_order_relaxed);
    stop_requested.store(true, std::memory_order_relaxed);
  }
  work_cv.notify_one();
  thread.join();
  // A callback here may stop another scheduler, whose callbacks then run nested.
  const void* outer = std::exchange(t_stopping, this);
  CancelUnfinished();
  t_stopping = outer;
  {
    std::lock_guard<std::mutex> lock(mu);
    phase = Phase::kStopped;
  }
  stopped_cv.notify_all();
  return Status::Ok();
}

void Scheduler::Impl::CancelUnfinished() {
  cancelling_unfinished = true;
  std::deque<Command> rest;
  {
    std::lock_guard<std::mutex> lock(mu);
    rest.swap(inbox);
  }
  // Admitting the last submits lets one path cancel every task.
  for (Command& command : rest) Apply(command);
  // Stopping is not the app's cancel: durable tasks stay in their journals.
  core.DetachJournals();
  std::vector<TaskId> ids;
  {
    std::lock_guard<std::mutex> lock(mu);
    ids.assign(unfinished.begin(), unfinished.end());
  }
  for (TaskId id : ids) (void)core.Cancel(id).ok();
}

void Scheduler::Impl::Apply(Command& command) {
  switch (command.kind) {
    case CommandKind::kSubmit:
      // A failure was reported through on_done (the task ended FAILED).
      (void)core.Admit(command.id, std::move(command.task), std::move(command.journal)).ok();
      break;
    case CommandKind::kCancel:
      // Cancel was checked when posted; the task may have finished since.
      (void)core.Cancel(command.id).ok();
      break;
    case CommandKind::kLifecycle:
      // Validated in order when posted, so it applies in order here.
      (void)core.OnLifecycleEvent(command.event).ok();
      break;
    case CommandKind::kThermal:
      // Validated when posted.
      (void)core.OnThermalStatus(command.thermal, command.headroom).ok();
      break;
    case CommandKind::kTrim:
      (void)core.OnTrimMemory(command.trim).ok();
      break;
    case CommandKind::kCall:
      command.call();
      break;
  }
}

template <typename Fn>
auto Scheduler::Impl::Call(Fn fn) -> decltype(fn()) {
  using R = decltype(fn());
  if (t_inference_of == this) return fn();
  auto reply = std::make_shared<std::promise<R>>();
  std::future<R> result = reply->get_future();
  Command command;
  command.kind = CommandKind::kCall;
  command.call = [fn = std::move(fn), reply] { reply->set_value(fn()); };
  if (!Post(std::move(command))) return R(Aborted("the scheduler is stopped"));
  return result.get();
}

Result<RecoveryReport> Scheduler::Impl::Recover(
    const std::function<TaskCallbacks(const RecoveredTask&)>& callbacks_for) {
  // Every task the core asks callbacks for gets exactly one on_done, like a
  // submitted one: counted here, uncounted by Track's wrapper.
  return core.Recover([&](const RecoveredTask& t) {
    TaskRequest holder;
    holder.tier = t.tier;
    if (callbacks_for) holder.callbacks = callbacks_for(t);
    Track(holder);
    std::lock_guard<std::mutex> lock(mu);
    ++outstanding;
    unfinished.insert(t.id);
    ++tier_counts[static_cast<size_t>(t.tier)].active;
    return std::move(holder.callbacks);
  });
}

Status Scheduler::Impl::ApplyBudgets(const MemoryBudgets& new_budgets) {
  Status s = core.SetMemoryBudgets(new_budgets);
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(mu);
    budgets = new_budgets;
  }
  return s;
}

void Scheduler::Impl::Loop() {
  t_inference_of = this;
  bool has_work = false;
  while (true) {
    std::deque<Command> batch;
    {
      std::unique_lock<std::mutex> lock(mu);
      work_cv.wait(lock, [&] { return phase != Phase::kRunning || !inbox.empty() || has_work; });
      if (phase != Phase::kRunning) return;
      batch.swap(inbox);
      // Every arrival that raised it is in `batch` now and will be planned.
      chat_arrived.store(false, std::memory_order_relaxed);
      chat_or_suggestion_arrived.store(false, std::memory_order_relaxed);
    }
    for (Command& command : batch) Apply(command);
    has_work = core.RunOneStep();
    SampleMemory();
  }
}

Scheduler::Scheduler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Scheduler>> Scheduler::Create(EngineInterface& engine, SchedulerOptions options) {
  if (!(options.fill_max_cost_fraction >= 0.0)) return InvalidArgument("fill_max_cost_fraction must be >= 0");
  if (!(options.prompt_token_weight >= 0.0 && options.prompt_token_weight <= 1e6)) {
    return InvalidArgument("prompt_token_weight must be in [0, 1e6]");
  }
  if (options.finished_task_records == 0) return InvalidArgument("finished_task_records must be at least 1");
  auto impl = std::make_unique<Impl>(engine, std::move(options));
  Impl* raw = impl.get();
  raw->SampleMemory();
  std::unique_ptr<Scheduler> scheduler(new Scheduler(std::move(impl)));
  raw->thread = std::thread([raw] { raw->Loop(); });
  return scheduler;
}

// From a task callback Stop refuses, and the joinable thread then ends the
// process: the documented misuse, which a destructor cannot report.
Scheduler::~Scheduler() { (void)impl_->Stop("scheduler destroyed"); }

Status Scheduler::Stop(const std::string& reason) { return impl_->Stop(reason); }

bool Scheduler::OnCallbackThread() const { return t_inference_of == impl_.get() || t_stopping == impl_.get(); }

Result<TaskId> Scheduler::Submit(TaskRequest request) {
  // Preparation is part of the wait the caller sees (TTFT counts it).
  const double submitted = impl_->core.Now();
  // Here, on the caller's thread: the inference thread only queues the result.
  Result<PreparedTask> prepared = impl_->core.preparer().Prepare(std::move(request));
  // A durable task is checked (CheckDurable) and journaled before Submit
  // returns: from then on the app (or an HTTP client told 202) may rely on it
  // surviving a kill.
  Result<std::optional<TaskJournal>> journal =
      prepared.ok() ? impl_->core.StartJournal(prepared->request) : Result<std::optional<TaskJournal>>(prepared.status());
  if (!journal.ok()) {
    impl_->core.recorder().UpdateStats([](SchedulerStats& st) { ++st.rejected; });
    return journal.status();
  }
  Impl* impl = impl_.get();
  const Tier tier = prepared->request.tier;
  impl->Track(prepared->request);
  TaskId id = 0;
  {
    // Registering under the inbox lock keeps id order equal to arrival order.
    std::lock_guard<std::mutex> lock(impl->mu);
    if (impl->phase != Impl::Phase::kRunning) {
      if (*journal) (void)RemoveJournal((*journal)->path()).ok();  // never accepted
      return InvalidArgument("the scheduler is stopped");
    }
    id = impl->core.recorder().Register(tier, submitted);
    ++impl->outstanding;
    impl->unfinished.insert(id);
    ++impl->tier_counts[static_cast<size_t>(tier)].active;
    Impl::Command command;
    command.kind = Impl::CommandKind::kSubmit;
    command.id = id;
    if (tier == Tier::kForegroundChat) impl->chat_arrived.store(true, std::memory_order_relaxed);
    if (tier <= Tier::kInlineSuggestion) impl->chat_or_suggestion_arrived.store(true, std::memory_order_relaxed);
    command.task = std::move(prepared).value();
    command.journal = std::move(journal).value();
    impl->inbox.push_back(std::move(command));
  }
  impl->work_cv.notify_one();
  return id;
}

Status Scheduler::Cancel(TaskId id) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    const std::optional<TaskState> state = impl_->core.recorder().State(id);
    if (!state && !impl_->core.recorder().Registered(id)) return NotFound("unknown task " + std::to_string(id));
    if (!state) return InvalidArgument("task " + std::to_string(id) + " already finished");
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
    VALET_ASSIGN_OR_RETURN(LifecycleState next, NextLifecycleState(impl_->lifecycle, event, impl_->history));
    impl_->lifecycle = next;
    impl_->history = LifecycleHistory::kEventsSeen;
    Impl::Command command;
    command.kind = Impl::CommandKind::kLifecycle;
    command.event = event;
    impl_->inbox.push_back(std::move(command));
  }
  impl_->work_cv.notify_one();
  return Status::Ok();
}

Status Scheduler::OnThermalStatus(ThermalStatus status, float headroom) {
  VALET_ASSIGN_OR_RETURN(ThermalStatus checked, ThermalStatusFromInt(static_cast<int>(status)));
  Impl::Command command;
  command.kind = Impl::CommandKind::kThermal;
  command.thermal = checked;
  command.headroom = headroom;
  impl_->Post(std::move(command));
  return Status::Ok();
}

Status Scheduler::OnTrimMemory(int level) {
  VALET_ASSIGN_OR_RETURN(TrimLevel checked, TrimLevelFromInt(level));
  Impl::Command command;
  command.kind = Impl::CommandKind::kTrim;
  command.trim = checked;
  impl_->Post(std::move(command));
  return Status::Ok();
}

Status Scheduler::SetMemoryBudgets(const MemoryBudgets& budgets) {
  // From a task callback Call applies them at once: the inference thread would wait for itself.
  Impl* impl = impl_.get();
  return impl->Call([impl, budgets] { return impl->ApplyBudgets(budgets); });
}

Result<RecoveryReport> Scheduler::Recover(std::function<TaskCallbacks(const RecoveredTask&)> callbacks_for) {
  Impl* impl = impl_.get();
  return impl->Call([impl, callbacks_for = std::move(callbacks_for)] { return impl->Recover(callbacks_for); });
}

Status Scheduler::Ack(const std::string& durable_key) {
  Impl* impl = impl_.get();
  return impl->Call([impl, durable_key] { return impl->core.Ack(durable_key); });
}

MemoryBudgets Scheduler::memory_budgets() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->budgets;
}

void Scheduler::WaitIdle() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->idle_cv.wait(lock, [&] { return impl_->outstanding == 0; });
}

LifecycleState Scheduler::lifecycle_state() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->lifecycle;
}

SchedulerStats Scheduler::Stats() const {
  SchedulerStats stats = impl_->core.recorder().Stats();
  std::lock_guard<std::mutex> lock(impl_->mu);
  stats.tasks_by_tier = impl_->tier_counts;
  stats.memory = impl_->memory;
  return stats;
}

Result<std::vector<TimelineEvent>> Scheduler::Timeline(TaskId id) const { return impl_->core.recorder().Timeline(id); }

Result<TaskMetrics> Scheduler::Metrics(TaskId id) const { return impl_->core.recorder().Metrics(id); }

std::string Scheduler::ChromeTraceJson() const { return impl_->core.recorder().ChromeTraceJson(); }

}  // namespace valet
