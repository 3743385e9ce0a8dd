// Scheduler::Stop: a running step of any tier, under any queue policy, stops
// at the engine's abort flag; waiters wake; unfinished tasks get on_done once,
// on a delivery thread, before Stop returns; later calls are refused or still
// answer; a callback may stop and even destroy its own scheduler.
// Every wait is on an event (join, WaitIdle, the abort flag); no sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "testing/sched/fake_engine.h"
#include "valet/scheduler.h"

namespace valet {
using namespace valet::testing;
namespace {

TaskRequest Req(Tier tier, const std::string& prompt, int32_t max_tokens) {
  TaskRequest r;
  r.tier = tier;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  return r;
}

struct DoneLog {
  std::mutex mu;
  std::vector<TaskResult> results;
  std::vector<std::thread::id> threads;

  void Attach(TaskRequest& r) {
    r.callbacks.on_done = [this](TaskId, const TaskResult& result) {
      std::lock_guard<std::mutex> lock(mu);
      results.push_back(result);
      threads.push_back(std::this_thread::get_id());
    };
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return results.size();
  }
};

// The first step of `tier`'s task blocks inside the engine until the abort
// flag the scheduler lent it is raised, so the task cannot finish before Stop,
// which another thread calls while two more wait in WaitIdle.
void StopWhileAStepRuns(QueuePolicy policy, Tier tier) {
  SCOPED_TRACE(std::string(QueuePolicyName(policy)) + " " + TierName(tier));
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  o.queue_policy = policy;
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  std::promise<void> in_step;
  std::atomic<bool> flag_lent{false};
  engine.set_step_hook([&](std::span<const StepItem>) {
    const std::atomic<bool>* flag = engine.abort_flag();
    flag_lent = flag != nullptr;
    if (flag == nullptr) return Internal("no abort flag lent for this step");
    in_step.set_value();
    while (!flag->load()) std::this_thread::yield();
    return Status::Ok();
  });
  DoneLog log;
  TaskRequest r = Req(tier, std::string(200, 'p'), 50);
  bool token_seen = false;
  r.callbacks.on_token = [&](TaskId, int32_t, std::string_view) { token_seen = true; };
  log.Attach(r);
  ASSERT_TRUE(s->Submit(std::move(r)).ok());
  in_step.get_future().wait();
  std::vector<std::thread> waiters;
  for (int i = 0; i < 2; ++i) waiters.emplace_back([&] { s->WaitIdle(); });
  std::thread::id stopper_id;
  Status stopped = Internal("not stopped");
  std::thread stopper([&] {
    stopper_id = std::this_thread::get_id();
    stopped = s->Stop();
  });
  stopper.join();
  for (std::thread& w : waiters) w.join();
  ASSERT_TRUE(stopped.ok()) << stopped.ToString();
  EXPECT_TRUE(flag_lent);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log.results[0].state, TaskState::kCancelled);
  EXPECT_EQ(log.results[0].status.code(), StatusCode::kAborted);
  EXPECT_EQ(log.results[0].status.message(), "scheduler stopped");
  EXPECT_NE(log.threads[0], stopper_id);  // a delivery thread's, waited for
  EXPECT_FALSE(token_seen);  // the aborted step computed nothing
  const SchedulerStats stats = s->Stats();
  EXPECT_EQ(stats.aborted_steps, 1);
  EXPECT_EQ(stats.cancelled, 1);
  EXPECT_EQ(engine.open_sequences(), 0u);
  // Stopped for good: refused, or still answering, never waiting.
  EXPECT_EQ(s->Submit(Req(Tier::kForegroundChat, "late", 4)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->SetMemoryBudgets(s->memory_budgets()).code(), StatusCode::kAborted);
  EXPECT_TRUE(s->Stop().ok());
  s->WaitIdle();
  engine.set_step_hook({});
}

TEST(SchedulerStop, StopsARunningStepOfAnyTierUnderAnyPolicy) {
  for (Tier tier : {Tier::kForegroundChat, Tier::kInlineSuggestion, Tier::kOfflineIndexing}) {
    StopWhileAStepRuns(QueuePolicy::kValet, tier);
  }
  StopWhileAStepRuns(QueuePolicy::kFifo, Tier::kForegroundChat);
  StopWhileAStepRuns(QueuePolicy::kBatchAll, Tier::kForegroundChat);
}

// Several threads stop at once: each returns only when every task has had
// its on_done, and the destructor afterwards has nothing left to do.
TEST(SchedulerStop, ConcurrentStopsEachReturnWhenEveryTaskIsDone) {
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  ASSERT_TRUE(s->OnThermalStatus(ThermalStatus::kEmergency).ok());  // only the chat tier runs
  DoneLog log;
  constexpr int kTasks = 12;
  for (int i = 0; i < kTasks; ++i) {
    TaskRequest r = Req(static_cast<Tier>(i % kNumTiers), "task " + std::to_string(i), 100);
    log.Attach(r);
    ASSERT_TRUE(s->Submit(std::move(r)).ok());
  }
  std::vector<size_t> seen(4);
  std::vector<Status> statuses(4, Internal("not run"));
  std::vector<std::thread> stoppers;
  for (size_t i = 0; i < seen.size(); ++i) {
    stoppers.emplace_back([&, i] {
      statuses[i] = s->Stop();
      seen[i] = log.size();
    });
  }
  for (std::thread& t : stoppers) t.join();
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_TRUE(statuses[i].ok()) << statuses[i].ToString();
    EXPECT_EQ(seen[i], static_cast<size_t>(kTasks));
  }
  int aborted = 0;
  for (const TaskResult& r : log.results) aborted += r.status.code() == StatusCode::kAborted ? 1 : 0;
  EXPECT_GE(aborted, 9);  // the nine non-chat tasks at least
  s.reset();
  EXPECT_EQ(log.size(), static_cast<size_t>(kTasks));
}

// Every step after the first holds the inference thread until the stop's
// abort flag is raised: a task cannot finish before its callback stops it.
void HoldStepsAfterTheFirstUntilStopped(FakeEngine& engine) {
  auto steps = std::make_shared<int>(0);
  engine.set_step_hook([&engine, steps](std::span<const StepItem>) {
    if (++*steps == 1) return Status::Ok();
    const std::atomic<bool>* flag = engine.abort_flag();
    if (flag == nullptr) return Internal("no abort flag lent for this step");
    while (!flag->load()) std::this_thread::yield();
    return Status::Ok();
  });
}

// Callbacks run on delivery threads, never the inference thread, so one may
// stop its own scheduler: Stop returns once the tasks are cancelled, and
// their callbacks (the caller's own task's on_done included) follow after.
TEST(SchedulerStop, ACallbackMayStopItsOwnScheduler) {
  FakeEngine engine;
  HoldStepsAfterTheFirstUntilStopped(engine);
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  Scheduler* raw = s.get();
  EXPECT_FALSE(s->OnCallbackThread());
  ASSERT_TRUE(s->OnThermalStatus(ThermalStatus::kEmergency).ok());  // holds the background task
  DoneLog log;
  TaskRequest held = Req(Tier::kOfflineIndexing, "held", 10);
  log.Attach(held);
  ASSERT_TRUE(s->Submit(std::move(held)).ok());
  std::vector<Status> from_token;
  std::vector<bool> on_callback_thread;
  TaskRequest chat = Req(Tier::kForegroundChat, "first", 3);
  log.Attach(chat);
  chat.callbacks.on_token = [&](TaskId, int32_t, std::string_view) {
    on_callback_thread.push_back(raw->OnCallbackThread());
    from_token.push_back(raw->Stop());
    from_token.push_back(raw->SetMemoryBudgets(raw->memory_budgets()));
  };
  ASSERT_TRUE(s->Submit(std::move(chat)).ok());
  s->WaitIdle();  // both on_done have run
  ASSERT_EQ(from_token.size(), 2u);  // the chat's other tokens never came
  EXPECT_TRUE(from_token[0].ok()) << from_token[0].ToString();
  EXPECT_EQ(from_token[1].code(), StatusCode::kAborted);
  EXPECT_EQ(on_callback_thread, std::vector<bool>{true});
  ASSERT_EQ(log.size(), 2u);
  for (const TaskResult& r : log.results) {
    EXPECT_EQ(r.state, TaskState::kCancelled);
    EXPECT_EQ(r.status.code(), StatusCode::kAborted);
  }
  EXPECT_EQ(s->Submit(Req(Tier::kForegroundChat, "late", 4)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s->Stop().ok());
  engine.set_step_hook({});
}

// The last reference to a task's callbacks dies with the scheduler's state.
struct FreedSignal {
  std::shared_ptr<std::promise<void>> freed;
  ~FreedSignal() {
    if (freed) freed->set_value();
  }
};

// A callback may even destroy its scheduler: the engine is done with when the
// destructor returns, and a thread of the scheduler's own frees the rest once
// every callback has returned (the signal fires only when it is freed).
TEST(SchedulerStop, ACallbackMayDestroyItsOwnScheduler) {
  FakeEngine engine;
  HoldStepsAfterTheFirstUntilStopped(engine);
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  Scheduler* raw = std::move(Scheduler::Create(engine, o)).value().release();
  auto freed = std::make_shared<std::promise<void>>();
  std::future<void> freed_future = freed->get_future();
  auto sentinel = std::make_shared<FreedSignal>();
  sentinel->freed = freed;
  std::promise<TaskResult> done;
  TaskRequest chat = Req(Tier::kForegroundChat, "first", 5);
  auto owner = std::make_shared<std::atomic<Scheduler*>>(raw);
  chat.callbacks.on_token = [owner, sentinel](TaskId, int32_t, std::string_view) { delete owner->exchange(nullptr); };
  chat.callbacks.on_done = [&done](TaskId, const TaskResult& r) { done.set_value(r); };
  ASSERT_TRUE(raw->Submit(std::move(chat)).ok());
  sentinel.reset();
  const TaskResult r = done.get_future().get();  // its on_done still comes, after the destroying callback
  EXPECT_EQ(r.state, TaskState::kCancelled);
  EXPECT_EQ(r.status.code(), StatusCode::kAborted);
  EXPECT_EQ(r.status.message(), "scheduler destroyed");
  EXPECT_EQ(r.tokens.size(), 1u);
  freed_future.wait();
  EXPECT_EQ(engine.open_sequences(), 0u);
  engine.set_step_hook({});
}

}  // namespace
}  // namespace valet
