// Scheduler::Stop: a running step of any tier, under any queue policy, stops
// at the engine's abort flag; waiters wake; unfinished tasks get on_done once,
// on the stopping thread; later calls are refused or still answer; calls that
// would wait for the scheduler's own thread are refused from its callbacks.
// Every wait is on an event (join, WaitIdle, the abort flag); no sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "sched/fake_engine.h"
#include "valet/scheduler.h"

namespace valet {
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
  EXPECT_EQ(log.threads[0], stopper_id);
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

// Stop and WaitIdle would wait for the thread a callback runs on: on the
// inference thread, and on the stopping thread while Stop cancels.
TEST(SchedulerStop, CallbacksAreRecognisedAndMayNotStop) {
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  Scheduler* raw = s.get();
  EXPECT_FALSE(s->OnCallbackThread());
  std::vector<Status> from_token;
  std::vector<bool> on_callback_thread;
  TaskRequest first = Req(Tier::kForegroundChat, "first", 1);
  first.callbacks.on_token = [&](TaskId, int32_t, std::string_view) {
    on_callback_thread.push_back(raw->OnCallbackThread());
    from_token.push_back(raw->Stop());
  };
  ASSERT_TRUE(s->Submit(std::move(first)).ok());
  s->WaitIdle();
  ASSERT_EQ(from_token.size(), 1u);
  EXPECT_EQ(from_token[0].code(), StatusCode::kInvalidArgument);
  EXPECT_NE(from_token[0].message().find("task callback"), std::string::npos);

  ASSERT_TRUE(s->OnThermalStatus(ThermalStatus::kEmergency).ok());  // holds the next task
  std::vector<Status> from_done;
  TaskRequest held = Req(Tier::kOfflineIndexing, "held", 10);
  held.callbacks.on_done = [&](TaskId, const TaskResult&) {
    on_callback_thread.push_back(raw->OnCallbackThread());
    from_done.push_back(raw->Stop());
    from_done.push_back(raw->SetMemoryBudgets(raw->memory_budgets()));
  };
  ASSERT_TRUE(s->Submit(std::move(held)).ok());
  ASSERT_TRUE(s->Stop().ok());
  EXPECT_FALSE(s->OnCallbackThread());  // no longer stopping
  EXPECT_EQ(on_callback_thread, (std::vector<bool>{true, true}));
  ASSERT_EQ(from_done.size(), 2u);
  EXPECT_EQ(from_done[0].code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(from_done[1].code(), StatusCode::kAborted);
}

}  // namespace
}  // namespace valet
