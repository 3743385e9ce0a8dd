// The threaded Scheduler's callbacks run on delivery threads: a listener
// blocked inside the app holds back only its own task (parked, bounded,
// resumed bit-identically), never the chat; a callback may wait for another
// task; Cancel is true exactly when the task ends CANCELLED. Waits are on
// latches, promises and WaitIdle; the one poll waits for a counter the
// scheduler must reach.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "sched_test_util.h"
#include "support/step_gate.h"

namespace valet {
using namespace valet::testing;
namespace {

using testing::ExpectedAlone;

TaskRequest Req(Tier tier, const std::string& prompt, int32_t max_tokens, uint64_t seed = 3) {
  TaskRequest r;
  r.tier = tier;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.sampling.seed = seed;
  return r;
}

// Events of several tasks in the order the app saw them.
struct EventLog {
  std::mutex mu;
  std::vector<std::pair<TaskId, std::string>> events;
  std::map<TaskId, std::vector<int32_t>> tokens;
  std::map<TaskId, TaskResult> results;

  void Note(TaskId id, const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    events.emplace_back(id, what);
  }
  // The index of the n-th (0-based) `what` event of `id`; -1 if none.
  int Index(TaskId id, const std::string& what, int n = 0) {
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i] == std::make_pair(id, what) && n-- == 0) return static_cast<int>(i);
    }
    return -1;
  }
  // Records tokens and results; `gate` (if any) holds the first token's callback.
  void Attach(TaskRequest& r, testing::StepGate* gate = nullptr, std::promise<void>* done = nullptr) {
    r.callbacks.on_token = [this, gate](TaskId id, int32_t token, std::string_view) {
      bool first = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        tokens[id].push_back(token);
        first = tokens[id].size() == 1;
      }
      Note(id, "token");
      if (first && gate != nullptr) (void)gate->Pass();
    };
    r.callbacks.on_done = [this, done](TaskId id, const TaskResult& result) {
      {
        std::lock_guard<std::mutex> lock(mu);
        results[id] = result;
      }
      Note(id, "done");
      if (done != nullptr) done->set_value();
    };
  }
};

SchedulerOptions Options(FakeEngine& engine, size_t max_pending) {
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  o.delivery.max_pending_events = max_pending;
  o.delivery.resume_at_events = 2;
  return o;
}

void WaitForConsumerWaits(const Scheduler& s, int64_t n) {
  while (s.Stats().consumer_waits < n) std::this_thread::yield();
}

// The scene: a background listener blocked in the app (a slow
// database write) while the user opens the chat. The chat runs and is
// delivered in full before the background task's next event; the background
// task, parked once its consumer is max_pending events behind, then finishes
// with exactly the tokens it has alone.
TEST(SchedulerDelivery, ASlowBackgroundListenerNeverDelaysTheChat) {
  FakeEngine engine;
  constexpr size_t kMaxPending = 8;
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, Options(engine, kMaxPending))).value();
  EventLog log;
  testing::StepGate slow;
  slow.Close();
  TaskRequest bg = Req(Tier::kOfflineIndexing, "index this document", 60);
  log.Attach(bg, &slow);
  const TaskId bg_id = *s->Submit(std::move(bg));
  slow.WaitHeld();
  WaitForConsumerWaits(*s, 1);  // it ran on until its backlog parked it
  std::promise<void> chat_done;
  TaskRequest chat = Req(Tier::kForegroundChat, "hello", 8);
  log.Attach(chat, nullptr, &chat_done);
  const TaskId chat_id = *s->Submit(std::move(chat));
  chat_done.get_future().wait();
  // Bounded while blocked: what one step adds past the limit, no more.
  const int32_t generated = s->Metrics(bg_id)->generated_tokens;
  EXPECT_LE(generated, static_cast<int32_t>(kMaxPending) + 2);
  EXPECT_LT(generated, 60);
  slow.Open();
  s->WaitIdle();
  EXPECT_LT(log.Index(chat_id, "done"), log.Index(bg_id, "token", 1));
  std::lock_guard<std::mutex> lock(log.mu);
  EXPECT_EQ(log.tokens[chat_id], ExpectedAlone(engine, "hello", 3, 8));
  EXPECT_EQ(log.tokens[bg_id], ExpectedAlone(engine, "index this document", 3, 60));
  EXPECT_EQ(log.results[bg_id].state, TaskState::kDone);
  EXPECT_EQ(log.results[bg_id].tokens, log.tokens[bg_id]);
}

// A slow chat listener holds back only the chat: background work runs and is
// delivered to the end meanwhile.
TEST(SchedulerDelivery, ASlowChatListenerHoldsBackOnlyTheChat) {
  FakeEngine engine;
  constexpr size_t kMaxPending = 4;
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, Options(engine, kMaxPending))).value();
  EventLog log;
  testing::StepGate slow;
  slow.Close();
  TaskRequest chat = Req(Tier::kForegroundChat, "tell me a story", 40);
  log.Attach(chat, &slow);
  const TaskId chat_id = *s->Submit(std::move(chat));
  slow.WaitHeld();
  std::promise<void> bg_done;
  TaskRequest bg = Req(Tier::kBackgroundSummary, "summarise", 30);
  log.Attach(bg, nullptr, &bg_done);
  const TaskId bg_id = *s->Submit(std::move(bg));
  bg_done.get_future().wait();
  EXPECT_LE(s->Metrics(chat_id)->generated_tokens, static_cast<int32_t>(kMaxPending) + 2);
  slow.Open();
  s->WaitIdle();
  EXPECT_GE(s->Stats().consumer_waits, 1);
  std::lock_guard<std::mutex> lock(log.mu);
  EXPECT_EQ(log.tokens[chat_id], ExpectedAlone(engine, "tell me a story", 3, 40));
  EXPECT_EQ(log.tokens[bg_id], ExpectedAlone(engine, "summarise", 3, 30));
}

// One task's on_done waits for another task's result (a future continuation
// that blocks): it holds one delivery thread, and the other task, submitted
// after it, still runs and is delivered.
TEST(SchedulerDelivery, ACallbackMayWaitForAnotherTask) {
  FakeEngine engine;
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, Options(engine, 32))).value();
  std::promise<TaskResult> second_result;
  std::shared_future<TaskResult> second = second_result.get_future().share();
  std::promise<size_t> first_saw;
  TaskRequest first = Req(Tier::kBackgroundSummary, "first", 4);
  first.callbacks.on_done = [&](TaskId, const TaskResult&) { first_saw.set_value(second.get().tokens.size()); };
  ASSERT_TRUE(s->Submit(std::move(first)).ok());
  TaskRequest later = Req(Tier::kBackgroundSummary, "second", 5);
  later.callbacks.on_done = [&](TaskId, const TaskResult& r) { second_result.set_value(r); };
  ASSERT_TRUE(s->Submit(std::move(later)).ok());
  EXPECT_EQ(first_saw.get_future().get(), 5u);
  s->WaitIdle();
}

// Sixteen threads submit and cancel at once, many cancels landing as tasks
// finish: a cancel that returned Ok always ends CANCELLED, and a task that
// ended CANCELLED was always cancelled by a call that returned Ok.
TEST(SchedulerDelivery, CancelIsOkExactlyWhenTheTaskEndsCancelled) {
  FakeEngine engine;
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, Options(engine, 32))).value();
  std::mutex mu;
  std::map<TaskId, TaskState> ended;
  std::map<TaskId, int> cancels_ok;
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(1000 + t));
      std::vector<TaskId> mine;
      for (int i = 0; i < 100; ++i) {
        std::string prompt = "task ";
        prompt += std::to_string(t * 100 + i);
        TaskRequest r = Req(static_cast<Tier>(rng() % kNumTiers), prompt, 1 + static_cast<int32_t>(rng() % 6));
        r.callbacks.on_done = [&](TaskId id, const TaskResult& result) {
          std::lock_guard<std::mutex> lock(mu);
          ended[id] = result.state;
        };
        // Some cancel themselves from their first token's callback, while
        // the inference thread is likely finishing them.
        if (rng() % 2 == 0) {
          auto first = std::make_shared<bool>(true);
          r.callbacks.on_token = [&, first](TaskId id, int32_t, std::string_view) {
            if (!std::exchange(*first, false)) return;
            const bool ok = s->Cancel(id).ok();
            std::lock_guard<std::mutex> lock(mu);
            cancels_ok[id] += ok ? 1 : 0;
          };
        }
        mine.push_back(*s->Submit(std::move(r)));
        // Cancel a task now, a little later, or twice.
        for (int c = static_cast<int>(rng() % 3); c < 2 && !mine.empty(); ++c) {
          const TaskId victim = mine[rng() % mine.size()];
          if (rng() % 2 == 0) std::this_thread::yield();
          const bool ok = s->Cancel(victim).ok();
          std::lock_guard<std::mutex> lock(mu);
          cancels_ok[victim] += ok ? 1 : 0;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  s->WaitIdle();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(ended.size(), 16u * 100u);
  int cancelled = 0;
  for (const auto& [id, state] : ended) {
    const bool said_ok = cancels_ok.count(id) != 0 && cancels_ok.at(id) > 0;
    EXPECT_EQ(said_ok, state == TaskState::kCancelled) << "task " << id << " ended " << TaskStateName(state);
    EXPECT_TRUE(state == TaskState::kDone || state == TaskState::kCancelled) << TaskStateName(state);
    cancelled += state == TaskState::kCancelled ? 1 : 0;
  }
  EXPECT_GT(cancelled, 0);
  EXPECT_EQ(s->Stats().cancelled, cancelled);
}

}  // namespace
}  // namespace valet
