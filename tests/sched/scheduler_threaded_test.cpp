// The threaded Scheduler: submits, cancels and lifecycle events from several
// threads, callbacks off the lock, a mid-step arrival, and shutdown. Waits are
// on completion events (WaitIdle, condition variables); no sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "common/private_files.h"
#include "durable/task_journal.h"
#include "sched_test_util.h"
#include "support/step_gate.h"

namespace valet {
using namespace valet::testing;
namespace {

using testing::ExpectedAlone;

struct Sink {
  std::mutex mu;
  std::map<TaskId, testing::Collected> out;

  void Attach(TaskRequest& r) {
    r.callbacks.on_token = [this](TaskId id, int32_t token, std::string_view text) {
      std::lock_guard<std::mutex> lock(mu);
      out[id].tokens.push_back(token);
      out[id].text += text;
    };
    r.callbacks.on_done = [this](TaskId id, const TaskResult& result) {
      std::lock_guard<std::mutex> lock(mu);
      out[id].result = result;
      ++out[id].done_calls;
    };
  }
};

TaskRequest Req(Tier tier, const std::string& prompt, int32_t max_tokens, uint64_t seed = 3) {
  TaskRequest r;
  r.tier = tier;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.sampling.seed = seed;
  return r;
}

TEST(SchedulerThreaded, ManyThreadsSubmitAndEveryTaskCompletesExactly) {
  FakeEngine engine;
  const FakeEngine reference;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  Sink sink;
  struct Sub {
    TaskId id;
    std::string prompt;
    int32_t max_tokens;
  };
  std::mutex subs_mu;
  std::vector<Sub> subs;
  {
    std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 25; ++i) {
          const std::string prompt = "thread " + std::to_string(t) + " task " + std::to_string(i);
          const int32_t max_tokens = 1 + (i * 7 + t) % 20;
          TaskRequest r = Req(static_cast<Tier>((i + t) % kNumTiers), prompt, max_tokens);
          sink.Attach(r);
          Result<TaskId> id = s->Submit(std::move(r));
          ASSERT_TRUE(id.ok());
          std::lock_guard<std::mutex> lock(subs_mu);
          subs.push_back({*id, prompt, max_tokens});
        }
      });
    }
    for (std::thread& th : threads) th.join();
    s->WaitIdle();
    const SchedulerStats stats = s->Stats();
    EXPECT_EQ(stats.submitted, 100);
    EXPECT_EQ(stats.done, 100);
    EXPECT_EQ(stats.cancelled, 0);
  }
  std::lock_guard<std::mutex> lock(sink.mu);
  for (const Sub& sub : subs) {
    EXPECT_EQ(sink.out[sub.id].done_calls, 1);
    EXPECT_EQ(sink.out[sub.id].tokens, ExpectedAlone(reference, sub.prompt, 3, sub.max_tokens));
  }
}

// Runs `running` on a threaded scheduler over the fake engine and submits
// `arrival` from inside engine step number `at_step`, i.e. while that step runs.
struct ArrivalDuringStep {
  ArrivalDuringStep() {
    SchedulerOptions o;
    o.clock = engine.ClockFunction();
    scheduler = std::move(Scheduler::Create(engine, o)).value();
  }

  void Run(TaskRequest running, TaskRequest arrival, int at_step, const std::function<void(Scheduler&)>& with_arrival = {}) {
    std::atomic<int> steps{0};
    engine.set_step_hook([&](std::span<const StepItem>) {
      if (++steps == at_step) {
        sink.Attach(arrival);
        arrival_id = *scheduler->Submit(std::move(arrival));
        if (with_arrival) with_arrival(*scheduler);
      }
      return Status::Ok();
    });
    sink.Attach(running);
    running_id = *scheduler->Submit(std::move(running));
    scheduler->WaitIdle();
    engine.set_step_hook({});  // it refers to this frame's locals
  }

  FakeEngineOptions options;
  FakeEngine engine{options};
  std::unique_ptr<Scheduler> scheduler;  // destroyed before the engine
  Sink sink;
  TaskId running_id = 0;
  std::atomic<TaskId> arrival_id{0};
};

// A foreground request arriving while a background prefill chunk runs stops
// that step between layers (the fake engine: before it computes anything), so
// it waits only for the background task to be parked; the aborted chunk is
// redone later and both outputs are as if each had run alone.
TEST(SchedulerThreaded, AnArrivalMidStepAbortsTheBackgroundStep) {
  ArrivalDuringStep t;
  t.Run(Req(Tier::kOfflineIndexing, std::string(300, 'd'), 8), Req(Tier::kForegroundChat, "urgent", 8), 3);
  const double park = t.options.park_overhead_seconds;
  const SchedulerStats stats = t.scheduler->Stats();
  EXPECT_EQ(stats.aborted_steps, 1);
  ASSERT_EQ(stats.preemption_latencies.size(), 1u);
  EXPECT_NEAR(stats.preemption_latencies[0], park, 1e-9);
  // Test-side accounting, independent of the recorder's latency figure.
  Result<TaskMetrics> fg_metrics = t.scheduler->Metrics(t.arrival_id);
  Result<std::vector<TimelineEvent>> bg_tl = t.scheduler->Timeline(t.running_id);
  ASSERT_TRUE(fg_metrics.ok() && bg_tl.ok());
  double parked_at = -1;
  for (const TimelineEvent& e : *bg_tl) {
    if (e.kind == TimelineKind::kParked) parked_at = e.time;
  }
  EXPECT_NEAR(parked_at - fg_metrics->submit_time, park, 1e-9);
  std::lock_guard<std::mutex> lock(t.sink.mu);
  EXPECT_EQ(t.sink.out[t.arrival_id].tokens, ExpectedAlone(t.engine, "urgent", 3, 8));
  EXPECT_EQ(t.sink.out[t.running_id].tokens, ExpectedAlone(t.engine, std::string(300, 'd'), 3, 8));
}

// The background chunk a chat's arrival stopped is planned again as it was,
// though the app went to the background meanwhile and its chunks grew (32 to
// 64 tokens): the engine goes on from where the step stopped, dropping nothing.
TEST(SchedulerThreaded, AStoppedStepIsPlannedAgainAsItWas) {
  ArrivalDuringStep t;
  t.Run(Req(Tier::kOfflineIndexing, std::string(300, 'd'), 8), Req(Tier::kForegroundChat, "urgent", 8), 3,
        [](Scheduler& s) { ASSERT_TRUE(s.OnLifecycleEvent(LifecycleEvent::kOnPause).ok()); });
  EXPECT_EQ(t.scheduler->Stats().aborted_steps, 1);
  EXPECT_EQ(t.engine.cut_tokens_dropped(), 0);
  std::lock_guard<std::mutex> lock(t.sink.mu);
  EXPECT_EQ(t.sink.out[t.arrival_id].tokens, ExpectedAlone(t.engine, "urgent", 3, 8));
  EXPECT_EQ(t.sink.out[t.running_id].tokens, ExpectedAlone(t.engine, std::string(300, 'd'), 3, 8));
}

// A suggestion's prompt step yields to a chat the same way.
TEST(SchedulerThreaded, AChatArrivingMidStepAbortsASuggestionsStep) {
  ArrivalDuringStep t;
  t.Run(Req(Tier::kInlineSuggestion, std::string(300, 's'), 6), Req(Tier::kForegroundChat, "urgent", 6), 2);
  EXPECT_EQ(t.scheduler->Stats().aborted_steps, 1);
  std::lock_guard<std::mutex> lock(t.sink.mu);
  EXPECT_EQ(t.sink.out[t.arrival_id].tokens, ExpectedAlone(t.engine, "urgent", 3, 6));
  EXPECT_EQ(t.sink.out[t.running_id].tokens, ExpectedAlone(t.engine, std::string(300, 's'), 3, 6));
}

// ...but not to another suggestion: same tier, first come first served.
TEST(SchedulerThreaded, ASuggestionDoesNotAbortAnotherSuggestion) {
  ArrivalDuringStep t;
  t.Run(Req(Tier::kInlineSuggestion, std::string(300, 's'), 6), Req(Tier::kInlineSuggestion, "next", 6), 2);
  EXPECT_EQ(t.scheduler->Stats().aborted_steps, 0);
}

// Only lower tiers yield: a chat arriving while another chat's prompt
// runs waits for that one step, which is not thrown away.
TEST(SchedulerThreaded, ForegroundStepsAreNotAborted) {
  ArrivalDuringStep t;
  t.Run(Req(Tier::kForegroundChat, std::string(200, 'f'), 4), Req(Tier::kForegroundChat, "second", 4), 1);
  EXPECT_EQ(t.scheduler->Stats().aborted_steps, 0);
  std::lock_guard<std::mutex> lock(t.sink.mu);
  EXPECT_EQ(t.sink.out[t.running_id].tokens, ExpectedAlone(t.engine, std::string(200, 'f'), 3, 4));
  EXPECT_EQ(t.sink.out[t.arrival_id].tokens, ExpectedAlone(t.engine, "second", 3, 4));
}

TEST(SchedulerThreaded, ErrorsAreSynchronousAndChangeNothing) {
  FakeEngineOptions eo;
  eo.context_length = 64;
  FakeEngine engine(eo);
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  Sink sink;
  EXPECT_EQ(s->Submit(Req(static_cast<Tier>(-1), "x", 4)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Submit(Req(Tier::kForegroundChat, "", 4)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Submit(Req(Tier::kForegroundChat, "x", -1)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Submit(Req(Tier::kForegroundChat, "x", 100)).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s->Cancel(77).code(), StatusCode::kNotFound);
  EXPECT_EQ(s->OnLifecycleEvent(LifecycleEvent::kOnStop).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->lifecycle_state(), LifecycleState::kResumed);
  // Too long only once tokenized: refused just the same, by Submit itself.
  TaskRequest too_long = Req(Tier::kForegroundChat, std::string(60, 'z'), 10);
  sink.Attach(too_long);
  Result<TaskId> bad = s->Submit(std::move(too_long));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(bad.status().message().find("61 tokens"), std::string::npos) << bad.status().message();
  TaskRequest fills = Req(Tier::kForegroundChat, std::string(63, 'z'), 0);  // 64 with BOS: no room at all
  EXPECT_EQ(s->Submit(std::move(fills)).status().code(), StatusCode::kOutOfRange);
  TaskRequest fine = Req(Tier::kForegroundChat, "ok", 5);
  sink.Attach(fine);
  const TaskId good = *s->Submit(std::move(fine));
  s->WaitIdle();
  EXPECT_EQ(s->Cancel(good).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Stats().rejected, 6);
  EXPECT_EQ(s->Stats().failed, 0);
  std::lock_guard<std::mutex> lock(sink.mu);
  EXPECT_EQ(sink.out.count(-1), 0u);
  EXPECT_EQ(sink.out.size(), 1u) << "no callback for a refused request";
  EXPECT_EQ(sink.out[good].result->state, TaskState::kDone);
  EXPECT_EQ(sink.out[good].tokens, ExpectedAlone(engine, "ok", 3, 5));
}

// Only the KV pool check waits for the inference thread (the pool's budget
// changes there): a task too large for the pool alone ends FAILED.
TEST(SchedulerThreaded, TaskOverThePoolFailsAtAdmission) {
  FakeEngineOptions eo;
  eo.kv_bytes_per_token = 1000;
  eo.pool_capacity_bytes = 50'000;
  FakeEngine engine(eo);
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  Sink sink;
  TaskRequest big = Req(Tier::kForegroundChat, std::string(100, 'x'), 10);
  sink.Attach(big);
  const TaskId id = *s->Submit(std::move(big));
  s->WaitIdle();
  std::lock_guard<std::mutex> lock(sink.mu);
  EXPECT_EQ(sink.out[id].result->state, TaskState::kFailed);
  EXPECT_EQ(sink.out[id].result->status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(sink.out[id].result->status.message().find("111 tokens"), std::string::npos);
}

// An engine that notes which threads tokenize.
class TokenizeThreads : public FakeEngine {
 public:
  using FakeEngine::FakeEngine;
  using EngineInterface::Tokenize;
  std::vector<int32_t> Tokenize(std::string_view text, const TokenizeOptions& options) const override {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.insert(std::this_thread::get_id());
    return FakeEngine::Tokenize(text, options);
  }
  std::set<std::thread::id> threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::set<std::thread::id> threads_;
};

// Rendering and tokenizing run on the submitting thread: with the inference
// thread held inside a step, a chat is still tokenized and a prompt too long
// is still refused, and the inference thread never tokenizes anything.
TEST(SchedulerThreaded, PreparationRunsOnTheSubmittingThread) {
  FakeEngineOptions eo;
  eo.context_length = 128;
  TokenizeThreads engine(eo);
  testing::StepGate gate;
  gate.Close();
  engine.set_step_hook([&](std::span<const StepItem>) { return gate.Pass(); });
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  Sink sink;
  TaskRequest first = Req(Tier::kOfflineIndexing, "background", 4);
  sink.Attach(first);
  ASSERT_TRUE(s->Submit(std::move(first)).ok());
  gate.WaitHeld();
  TaskRequest chat = Req(Tier::kForegroundChat, "", 4);
  chat.messages = {{"user", std::string(50, 'q')}};
  sink.Attach(chat);
  ASSERT_TRUE(s->Submit(std::move(chat)).ok());
  TaskRequest too_long = Req(Tier::kForegroundChat, "", 4);
  too_long.messages = {{"user", std::string(200, 'q')}};
  EXPECT_EQ(s->Submit(std::move(too_long)).status().code(), StatusCode::kOutOfRange);
  gate.Open();
  s->WaitIdle();
  EXPECT_EQ(engine.threads(), std::set<std::thread::id>{std::this_thread::get_id()});
  EXPECT_EQ(s->Stats().done, 2);
}

// A durable task is journaled before Submit returns, on the submitting
// thread: with the inference thread held inside a step, its journal is
// already on disk, so a kill right after Submit (an HTTP 202) loses nothing.
TEST(SchedulerThreaded, ADurableTaskIsJournaledBeforeSubmitReturns) {
  FakeEngine engine;
  testing::StepGate gate;
  gate.Close();
  engine.set_step_hook([&](std::span<const StepItem>) { return gate.Pass(); });
  Result<std::string> dir = MakeScratchDirectory("valet-threaded-durable-");
  ASSERT_TRUE(dir.ok());
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  o.durable_dir = *dir + "/tasks";
  o.model_fingerprint = "fake";
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  Sink sink;
  TaskRequest first = Req(Tier::kOfflineIndexing, "background", 4);
  sink.Attach(first);
  ASSERT_TRUE(s->Submit(std::move(first)).ok());
  gate.WaitHeld();
  TaskRequest durable = Req(Tier::kOfflineIndexing, "index me", 4);
  durable.durable = true;
  durable.durable_key = "doc-1";
  sink.Attach(durable);
  ASSERT_TRUE(s->Submit(std::move(durable)).ok());
  EXPECT_TRUE(std::filesystem::exists(JournalPath(o.durable_dir, "doc-1")));
  gate.Open();
  s->WaitIdle();
  EXPECT_EQ(s->Stats().done, 2);
  EXPECT_TRUE(s->Ack("doc-1").ok());
  s.reset();
  std::filesystem::remove_all(*dir);
}

TEST(SchedulerThreaded, CallbacksMaySubmitCancelAndSendLifecycleEvents) {
  FakeEngine engine;
  // The victim's first step is held until the chat is queued: otherwise the
  // inference thread may finish all of the victim before the chat arrives.
  testing::StepGate gate;
  gate.Close();
  // Callbacks are delivered off the inference thread, which could finish the
  // victim before the chat's callback cancels it: once the chat has run, a
  // step of the victim alone waits for that cancel.
  std::mutex cancel_mu;
  std::condition_variable cancel_cv;
  bool cancel_sent = false;
  SequenceId victim_seq = 0;  // these two on the inference thread only
  bool chat_ran = false;
  engine.set_step_hook([&](std::span<const StepItem> items) {
    Status passed = gate.Pass();
    if (victim_seq == 0) {
      victim_seq = items.front().seq;  // the first step is the victim's
      return passed;
    }
    const bool victim_alone =
        std::all_of(items.begin(), items.end(), [&](const StepItem& item) { return item.seq == victim_seq; });
    if (!victim_alone) {
      chat_ran = true;
    } else if (chat_ran) {
      std::unique_lock<std::mutex> lock(cancel_mu);
      cancel_cv.wait(lock, [&] { return cancel_sent; });
    }
    return passed;
  });
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  Sink sink;
  TaskRequest victim = Req(Tier::kOfflineIndexing, "victim", 100);
  sink.Attach(victim);
  const TaskId victim_id = *s->Submit(std::move(victim));
  gate.WaitHeld();
  std::atomic<TaskId> follow{0};
  TaskRequest first = Req(Tier::kForegroundChat, "first", 3);
  sink.Attach(first);
  auto done = first.callbacks.on_done;
  first.callbacks.on_done = [&, done](TaskId id, const TaskResult& r) {
    done(id, r);
    EXPECT_TRUE(s->Cancel(victim_id).ok());
    {
      std::lock_guard<std::mutex> lock(cancel_mu);
      cancel_sent = true;
    }
    cancel_cv.notify_all();
    EXPECT_TRUE(s->OnLifecycleEvent(LifecycleEvent::kOnPause).ok());
    TaskRequest next = Req(Tier::kForegroundChat, "second", 3);
    sink.Attach(next);
    follow = *s->Submit(std::move(next));
  };
  ASSERT_TRUE(s->Submit(std::move(first)).ok());
  gate.Open();
  s->WaitIdle();
  EXPECT_EQ(s->lifecycle_state(), LifecycleState::kStarted);
  std::lock_guard<std::mutex> lock(sink.mu);
  EXPECT_EQ(sink.out[follow].tokens, ExpectedAlone(engine, "second", 3, 3));
  EXPECT_EQ(sink.out[victim_id].result->state, TaskState::kCancelled);
}

TEST(SchedulerThreaded, KeepsTheRecordsOfTheLastFinishedTasksItWasToldTo) {
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  o.finished_task_records = 0;
  EXPECT_EQ(Scheduler::Create(engine, o).status().code(), StatusCode::kInvalidArgument);
  o.finished_task_records = 2;
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  std::vector<TaskId> ids;
  for (const char* prompt : {"one", "two", "three"}) {
    ids.push_back(*s->Submit(Req(Tier::kForegroundChat, prompt, 2)));
    s->WaitIdle();
  }
  const Result<std::vector<TimelineEvent>> oldest = s->Timeline(ids[0]);
  ASSERT_FALSE(oldest.ok());
  EXPECT_NE(oldest.status().message().find("the last 2 finished tasks are kept"), std::string::npos)
      << oldest.status().message();
  EXPECT_TRUE(s->Timeline(ids[1]).ok());
  EXPECT_TRUE(s->Timeline(ids[2]).ok());
}

TEST(SchedulerThreaded, CallbacksMaySetMemoryBudgets) {
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  MemoryBudgets smaller = s->memory_budgets();
  smaller.pool_bytes /= 2;
  Status from_callback = Internal("not called");
  TaskRequest r = Req(Tier::kForegroundChat, "first", 3);
  r.callbacks.on_done = [&](TaskId, const TaskResult&) { from_callback = s->SetMemoryBudgets(smaller); };
  ASSERT_TRUE(s->Submit(std::move(r)).ok());
  s->WaitIdle();  // the inference thread applied them itself instead of waiting for itself
  EXPECT_TRUE(from_callback.ok()) << from_callback.ToString();
  EXPECT_EQ(s->memory_budgets().pool_bytes, smaller.pool_bytes);
  EXPECT_EQ(engine.memory().pool_capacity_bytes, smaller.pool_bytes);
}

TEST(SchedulerThreaded, SettingBudgetsWhileBeingDestroyedFailsInsteadOfWaiting) {
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  Scheduler* raw = s.get();
  const MemoryBudgets budgets = s->memory_budgets();
  std::vector<Status> during;
  TaskRequest r = Req(Tier::kOfflineIndexing, "long", 2000);
  // Cancelled by the destructor, on the destroying thread: nothing is left to answer a command.
  r.callbacks.on_done = [&](TaskId, const TaskResult&) { during.push_back(raw->SetMemoryBudgets(budgets)); };
  ASSERT_TRUE(s->Submit(std::move(r)).ok());
  s.reset();
  ASSERT_EQ(during.size(), 1u);
  EXPECT_EQ(during[0].code(), StatusCode::kAborted);
}

TEST(SchedulerThreaded, DestroyingWithUnfinishedTasksStopsPromptly) {
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s->Submit(Req(Tier::kOfflineIndexing, "long", 2000)).ok());
  s.reset();  // joins the inference thread after its current step
  SUCCEED();
}

TEST(SchedulerThreaded, ChromeTraceOfARun) {
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  ASSERT_TRUE(s->Submit(Req(Tier::kForegroundChat, "trace me", 4)).ok());
  s->WaitIdle();
  const std::string json = s->ChromeTraceJson();
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(json.find("first_token"), std::string::npos);
}

}  // namespace
}  // namespace valet
