// The threaded Scheduler: callers post commands to a mutex-protected inbox;
// the inference thread drains it between steps and drives SchedulerCore. It
// waits on a condition variable only when the core has nothing to run, for
// "a command or stop" - an event, never a timeout. The app's callbacks only
// queue events there; delivery threads run them (CallbackDispatcher).
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "sched/callback_dispatcher.h"
#include "sched/scheduler_core.h"
#include "valet/scheduler.h"

namespace valet {

namespace {

// The scheduler (its Impl) whose inference thread this is. Thread ids are
// reused once a thread ends; this marker dies with its thread.
thread_local const void* t_inference_of = nullptr;

}  // namespace

struct Scheduler::Impl {
  enum class CommandKind { kSubmit, kCancel, kLifecycle, kThermal, kPower, kTrim, kCaughtUp, kRetryJournals, kCall };
  struct Command {
    CommandKind kind = CommandKind::kSubmit;
    TaskId id = 0;
    PreparedTask task;  // kSubmit
    std::optional<TaskJournal> journal;  // kSubmit: a durable task's, created by Submit
    LifecycleEvent event = LifecycleEvent::kOnCreate;
    ThermalStatus thermal = ThermalStatus::kNone;
    float headroom = -1.0f;
    PowerState power;  // kPower
    TrimLevel trim = TrimLevel::kRunningModerate;
    std::function<void()> call;  // kCall: Call()'s work, which answers its waiting caller
  };

  Impl(EngineInterface& engine, SchedulerOptions options)
      : engine(engine),
        lifecycle(options.initial_state),
        delivery(options.delivery),
        core(engine, std::move(options)),
        budgets(core.memory_budgets()),
        dispatcher(delivery, [this](TaskId id) { CaughtUp(id); }) {
    core.set_arrival_signals({&chat_arrived, &chat_or_suggestion_arrived, &stop_requested});
    core.set_app_hooks({.consumer_behind = [this](TaskId id) { return dispatcher.Behind(id); },
                        .settle_end = [this](TaskId id) { return SettleEnd(id); },
                        .cancel_requested = [this](TaskId id) {
                          std::lock_guard<std::mutex> lock(mu);
                          return cancel_requested.count(id) != 0;
                        }});
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
  // Wraps the task's callbacks: on the inference thread they keep the
  // per-tier counts and queue the app's callbacks for delivery, after whose
  // on_done the task's bookkeeping ends.
  void Track(TaskRequest& request);
  void NoteState(Tier tier, TaskState from, TaskState to);
  void NoteFinished(Tier tier, TaskState state);
  void TaskDelivered(TaskId id);
  // AppHooks::settle_end: whether the app's Cancel came first.
  bool SettleEnd(TaskId id);
  // From a delivery thread: the task's consumer has caught up.
  void CaughtUp(TaskId id);
  void SampleMemory();
  Status Stop(const std::string& reason);
  // Stop's second half: the inference thread has ended, so the core belongs
  // to the stopping thread.
  void CancelUnfinished();
  bool OnCallbackThread() const { return t_inference_of == this || dispatcher.OnDeliveryThread(); }

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
  int64_t outstanding = 0;   // accepted tasks whose on_done has not run yet
  std::set<TaskId> unfinished;
  // Cancel and a task's end meet here (SettleEnd): the first decides.
  std::set<TaskId> cancel_requested;
  std::set<TaskId> settled;  // ended (or ending) on the inference thread
  std::array<TierTaskCounts, kNumTiers> tier_counts{};
  MemoryStats memory;
  // Set after the inference thread has joined, by the stopping thread, which
  // then runs the core and its callback wrappers.
  bool cancelling_unfinished = false;
  DeliveryOptions delivery;
  SchedulerCore core;        // inference thread only (its recorder is thread-safe)
  MemoryBudgets budgets;     // as last set (guarded by mu)
  std::thread thread;
  // Last: destroyed first, once every event is delivered, while what its
  // callbacks reach (the inbox) still exists.
  CallbackDispatcher dispatcher;
};

void Scheduler::Impl::Track(TaskRequest& request) {
  const Tier tier = request.tier;
  TaskCallbacks user = std::move(request.callbacks);
  TaskCallbacks& cb = request.callbacks;
  if (user.on_token) {
    cb.on_token = [this, tier, f = std::move(user.on_token)](TaskId id, int32_t token, std::string_view text) {
      dispatcher.Post(id, tier, [f, id, token, text = std::string(text)] { f(id, token, text); });
    };
  }
  if (user.on_logprobs) {
    cb.on_logprobs = [this, tier, f = std::move(user.on_logprobs)](TaskId id, const TokenLogprobs& lp) {
      dispatcher.Post(id, tier, [f, id, lp] { f(id, lp); });
    };
  }
  auto last = std::make_shared<TaskState>(TaskState::kQueued);  // inference (or stopping) thread only
  cb.on_state = [this, tier, last, f = std::move(user.on_state)](TaskId id, TaskState state) {
    NoteState(tier, *last, state);
    *last = state;
    if (f) dispatcher.Post(id, tier, [f, id, state] { f(id, state); });
  };
  cb.on_done = [this, tier, f = std::move(user.on_done)](TaskId id, const TaskResult& result) {
    NoteFinished(tier, result.state);
    TaskResult r = result;
    if (cancelling_unfinished) r.status = Aborted(stop_message);
    dispatcher.Post(id, tier, [this, f, id, r = std::move(r)] {
      if (f) f(id, r);
      TaskDelivered(id);
    });
  };
}

void Scheduler::Impl::NoteState(Tier tier, TaskState from, TaskState to) {
  if ((from == TaskState::kParked) == (to == TaskState::kParked)) return;
  std::lock_guard<std::mutex> lock(mu);
  tier_counts[static_cast<size_t>(tier)].parked += to == TaskState::kParked ? 1 : -1;
}

void Scheduler::Impl::NoteFinished(Tier tier, TaskState state) {
  std::lock_guard<std::mutex> lock(mu);
  TierTaskCounts& c = tier_counts[static_cast<size_t>(tier)];
  --c.active;
  if (state == TaskState::kDone) ++c.done;
  if (state == TaskState::kCancelled) ++c.cancelled;
  if (state == TaskState::kFailed) ++c.failed;
}

void Scheduler::Impl::TaskDelivered(TaskId id) {
  std::lock_guard<std::mutex> lock(mu);
  unfinished.erase(id);
  cancel_requested.erase(id);
  settled.erase(id);
  if (--outstanding == 0) idle_cv.notify_all();
}

bool Scheduler::Impl::SettleEnd(TaskId id) {
  std::lock_guard<std::mutex> lock(mu);
  settled.insert(id);
  return cancel_requested.count(id) != 0;
}

void Scheduler::Impl::CaughtUp(TaskId id) {
  Command command;
  command.kind = CommandKind::kCaughtUp;
  command.id = id;
  (void)Post(std::move(command));  // stopping: nothing runs again anyway
}

void Scheduler::Impl::SampleMemory() {
  const EngineMemory m = engine.memory();
  std::lock_guard<std::mutex> lock(mu);
  memory = {m.pool_used_bytes,     m.pool_capacity_bytes,       m.snapshot_ram_bytes,
            m.snapshot_disk_bytes, m.weights_file_backed_bytes, m.weights_anonymous_bytes, m.scratch_bytes};
}

Status Scheduler::Impl::Stop(const std::string& reason) {
  if (t_inference_of == this) {
    return InvalidArgument("Stop called on the scheduler's inference thread: it would wait for itself");
  }
  bool first = false;
  {
    std::unique_lock<std::mutex> lock(mu);
    if (phase != Phase::kRunning) {
      stopped_cv.wait(lock, [&] { return phase == Phase::kStopped; });
    } else {
      first = true;
      phase = Phase::kStopping;
      stop_message = reason;
      chat_arrived.store(true, std::memory_order_relaxed);
      chat_or_suggestion_arrived.store(true, std::memory_order_relaxed);
      stop_requested.store(true, std::memory_order_relaxed);
    }
  }
  if (first) {
    work_cv.notify_one();
    thread.join();
    CancelUnfinished();
    core.ReleaseEngine();
    {
      std::lock_guard<std::mutex> lock(mu);
      phase = Phase::kStopped;
    }
    stopped_cv.notify_all();
  }
  // A callback's own task has events queued behind it: they follow when it returns.
  if (!dispatcher.OnDeliveryThread()) dispatcher.WaitUntilIdle();
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
  core.journals().DetachJournals();
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
    case CommandKind::kPower:
      // Validated when posted.
      (void)core.OnPowerState(command.power).ok();
      break;
    case CommandKind::kTrim:
      (void)core.memory().OnTrimMemory(command.trim).ok();
      break;
    case CommandKind::kCaughtUp:
      core.ConsumerCaughtUp(command.id);
      break;
    case CommandKind::kRetryJournals:
      core.journals().RetryJournals();
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

namespace {

// Callbacks that call whatever `slot` holds when they run.
TaskCallbacks Forwarding(const std::shared_ptr<const TaskCallbacks>& slot) {
  TaskCallbacks cb;
  cb.on_token = [slot](TaskId id, int32_t token, std::string_view text) {
    if (slot->on_token) slot->on_token(id, token, text);
  };
  cb.on_logprobs = [slot](TaskId id, const TokenLogprobs& lp) {
    if (slot->on_logprobs) slot->on_logprobs(id, lp);
  };
  cb.on_state = [slot](TaskId id, TaskState state) {
    if (slot->on_state) slot->on_state(id, state);
  };
  cb.on_done = [slot](TaskId id, const TaskResult& result) {
    if (slot->on_done) slot->on_done(id, result);
  };
  return cb;
}

}  // namespace

Result<RecoveryReport> Scheduler::Impl::Recover(
    const std::function<TaskCallbacks(const RecoveredTask&)>& callbacks_for) {
  // The app's callbacks_for runs here, on the calling thread, never on the
  // inference thread: each resumed task starts with forwarding callbacks
  // and its events held until the app's callbacks are in place.
  struct Resumed {
    TaskId id = 0;
    std::shared_ptr<TaskCallbacks> slot;
  };
  std::vector<Resumed> resumed;
  Result<RecoveryReport> report = Call([&]() -> Result<RecoveryReport> {
    // Every task the core asks callbacks for gets exactly one on_done, like
    // a submitted one: counted here, uncounted by Track's wrapper.
    return core.journals().Recover([&](const RecoveredTask& t) {
      auto slot = std::make_shared<TaskCallbacks>();
      dispatcher.Hold(t.id);
      resumed.push_back({t.id, slot});
      TaskRequest holder;
      holder.tier = t.tier;
      holder.callbacks = Forwarding(slot);
      Track(holder);
      std::lock_guard<std::mutex> lock(mu);
      ++outstanding;
      unfinished.insert(t.id);
      ++tier_counts[static_cast<size_t>(t.tier)].active;
      return std::move(holder.callbacks);
    });
  });
  for (const Resumed& r : resumed) {
    if (callbacks_for && report.ok()) {
      for (const RecoveredTask& t : report->tasks) {
        if (t.id == r.id) *r.slot = callbacks_for(t);
      }
    }
    dispatcher.Release(r.id);
  }
  return report;
}

Status Scheduler::Impl::ApplyBudgets(const MemoryBudgets& new_budgets) {
  Status s = core.memory().SetMemoryBudgets(new_budgets);
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
  VALET_RETURN_IF_ERROR(CheckPowerState(options.initial_power));
  auto impl = std::make_unique<Impl>(engine, std::move(options));
  // A durable directory that is not private is refused outright; one that
  // cannot be made leaves durable tasks unavailable, as a snapshot directory
  // that cannot be made leaves the disk tier off.
  const Status& durable_dir = impl->core.durable_dir_status();
  if (durable_dir.code() == StatusCode::kInvalidArgument) return durable_dir;
  Impl* raw = impl.get();
  raw->SampleMemory();
  std::unique_ptr<Scheduler> scheduler(new Scheduler(std::move(impl)));
  raw->thread = std::thread([raw] { raw->Loop(); });
  return scheduler;
}

Scheduler::~Scheduler() {
  (void)impl_->Stop("scheduler destroyed");
  if (!impl_->dispatcher.OnDeliveryThread()) return;  // every callback has returned
  // A delivery thread cannot wait for its own callback: another thread waits
  // for the rest of delivery, then frees. The engine is no longer used.
  Impl* impl = impl_.release();
  std::thread([impl] { delete impl; }).detach();
}

Status Scheduler::Stop(const std::string& reason) { return impl_->Stop(reason); }

bool Scheduler::OnCallbackThread() const { return impl_->OnCallbackThread(); }

Result<TaskId> Scheduler::Submit(TaskRequest request) {
  Impl* impl = impl_.get();
  // Preparation is part of the wait the caller sees (TTFT counts it); it and
  // a durable task's journal are done here, on the caller's thread: the
  // inference thread only queues the result (SchedulerCore::Admit).
  const double submitted = impl->core.Now();
  AdmissionSteps steps;
  steps.lock = &impl->mu;
  steps.open = [impl]() -> Status {
    return impl->phase == Impl::Phase::kRunning ? Status::Ok() : InvalidArgument("the scheduler is stopped");
  };
  steps.submitted = submitted;
  steps.before_register = [impl](TaskRequest& r) { impl->Track(r); };
  steps.accept = [impl](AdmittedTask task) {  // under impl->mu
    const Tier tier = task.prepared.request.tier;
    ++impl->outstanding;
    impl->unfinished.insert(task.id);
    ++impl->tier_counts[static_cast<size_t>(tier)].active;
    Impl::Command command;
    command.kind = Impl::CommandKind::kSubmit;
    command.id = task.id;
    if (tier == Tier::kForegroundChat) impl->chat_arrived.store(true, std::memory_order_relaxed);
    if (tier <= Tier::kInlineSuggestion) impl->chat_or_suggestion_arrived.store(true, std::memory_order_relaxed);
    command.task = std::move(task.prepared);
    command.journal = std::move(task.journal);
    impl->inbox.push_back(std::move(command));
  };
  Result<TaskId> id = impl->core.admission().Admit(std::move(request), steps);
  if (!id.ok()) return id;
  impl->work_cv.notify_one();
  return id;
}

Status Scheduler::Cancel(TaskId id) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    const std::optional<TaskState> state = impl_->core.recorder().State(id);
    if (!state && !impl_->core.recorder().Registered(id)) return NotFound("unknown task " + std::to_string(id));
    if (!state || IsTerminal(*state) || impl_->settled.count(id) != 0) {
      return InvalidArgument("task " + std::to_string(id) + " already finished" +
                             (state && IsTerminal(*state) ? std::string(" (") + TaskStateName(*state) + ")" : ""));
    }
    // Settled from here: the task ends CANCELLED whatever else ends it first.
    if (!impl_->cancel_requested.insert(id).second) return Status::Ok();
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

Status Scheduler::OnPowerState(const PowerState& power) {
  VALET_RETURN_IF_ERROR(CheckPowerState(power));
  Impl::Command command;
  command.kind = Impl::CommandKind::kPower;
  command.power = power;
  impl_->Post(std::move(command));
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
  return impl_->Recover(callbacks_for);
}

Status Scheduler::Ack(const std::string& durable_key) {
  Impl* impl = impl_.get();
  return impl->Call([impl, durable_key] { return impl->core.journals().Ack(durable_key); });
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

Result<TaskInfo> Scheduler::Info(TaskId id) const { return impl_->core.recorder().Info(id); }

Status Scheduler::RetryJournals() {
  Impl::Command command;
  command.kind = Impl::CommandKind::kRetryJournals;
  if (!impl_->Post(std::move(command))) return Aborted("the scheduler is stopped");
  return Status::Ok();
}

std::string Scheduler::ChromeTraceJson() const { return impl_->core.recorder().ChromeTraceJson(); }

}  // namespace valet
