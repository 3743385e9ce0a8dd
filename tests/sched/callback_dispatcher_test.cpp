// CallbackDispatcher: each task's events in order and exactly once; a blocked
// callback holds only its own task; backpressure reported and released once;
// the foreground first when threads are scarce. Waits are on promises and
// latches, never sleeps.
#include "sched/callback_dispatcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <vector>

#include "support/step_gate.h"

namespace valet {
namespace {

TEST(CallbackDispatcher, DeliversEveryTasksEventsInOrderExactlyOnce) {
  std::mutex mu;
  std::map<TaskId, std::vector<int>> seen;
  std::atomic<int> wrong_thread{0};
  CallbackDispatcher d(DeliveryOptions{}, [](TaskId) {});
  for (int i = 0; i < 2000; ++i) {
    const TaskId id = i % 13;
    d.Post(id, static_cast<Tier>(id % kNumTiers), [&, id, i] {
      if (!d.OnDeliveryThread()) ++wrong_thread;
      std::lock_guard<std::mutex> lock(mu);
      seen[id].push_back(i);
    });
  }
  d.WaitUntilIdle();
  EXPECT_FALSE(d.OnDeliveryThread());
  EXPECT_EQ(wrong_thread, 0);
  ASSERT_EQ(seen.size(), 13u);
  for (const auto& [id, events] : seen) {
    std::vector<int> expected;
    for (int i = static_cast<int>(id); i < 2000; i += 13) expected.push_back(i);
    EXPECT_EQ(events, expected) << "task " << id;
  }
}

// A callback blocked inside the app holds one thread and its own task; another
// task's events are delivered meanwhile.
TEST(CallbackDispatcher, ABlockedCallbackHoldsOnlyItsOwnTask) {
  CallbackDispatcher d(DeliveryOptions{}, [](TaskId) {});
  testing::StepGate gate;
  gate.Close();
  std::atomic<int> slow_after{0};
  d.Post(1, Tier::kOfflineIndexing, [&] { (void)gate.Pass(); });
  d.Post(1, Tier::kOfflineIndexing, [&] { ++slow_after; });
  gate.WaitHeld();
  std::promise<void> other;
  d.Post(2, Tier::kOfflineIndexing, [&] { other.set_value(); });
  other.get_future().wait();
  EXPECT_EQ(slow_after, 0);  // still behind the blocked one
  gate.Open();
  d.WaitUntilIdle();
  EXPECT_EQ(slow_after, 1);
}

TEST(CallbackDispatcher, ReportsABacklogOnceAndItsEndOnce) {
  std::mutex mu;
  std::vector<TaskId> caught_up;
  std::promise<void> caught_up_called;
  DeliveryOptions o;
  o.max_pending_events = 4;
  o.resume_at_events = 1;
  CallbackDispatcher d(o, [&](TaskId id) {
    std::lock_guard<std::mutex> lock(mu);
    caught_up.push_back(id);
    caught_up_called.set_value();
  });
  EXPECT_FALSE(d.Behind(7));  // nothing pending
  testing::StepGate gate;
  gate.Close();
  d.Post(7, Tier::kBackgroundSummary, [&] { (void)gate.Pass(); });
  gate.WaitHeld();
  for (int i = 0; i < 2; ++i) d.Post(7, Tier::kBackgroundSummary, [] {});
  EXPECT_FALSE(d.Behind(7));  // 3 pending
  d.Post(7, Tier::kBackgroundSummary, [] {});
  EXPECT_TRUE(d.Behind(7));  // 4
  EXPECT_TRUE(d.Behind(7));  // still, and reported once
  gate.Open();
  caught_up_called.get_future().wait();
  d.WaitUntilIdle();
  EXPECT_FALSE(d.Behind(7));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(caught_up, std::vector<TaskId>{7});
}

// With one thread, busy in a background callback, the chat's event is next
// when it frees up, ahead of background events posted before it.
TEST(CallbackDispatcher, TheForegroundGoesFirstWhenThreadsAreScarce) {
  DeliveryOptions o;
  o.max_threads = 1;
  CallbackDispatcher d(o, [](TaskId) {});
  testing::StepGate gate;
  gate.Close();
  std::mutex mu;
  std::vector<TaskId> order;
  auto note = [&](TaskId id) {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(id);
  };
  d.Post(1, Tier::kOfflineIndexing, [&] { (void)gate.Pass(); });
  gate.WaitHeld();
  d.Post(2, Tier::kOfflineIndexing, [&] { note(2); });
  d.Post(3, Tier::kBackgroundSummary, [&] { note(3); });
  d.Post(4, Tier::kForegroundChat, [&] { note(4); });
  gate.Open();
  d.WaitUntilIdle();
  EXPECT_EQ(order, (std::vector<TaskId>{4, 3, 2}));
}

// A held task's events wait, in order, until it is released; the others run.
TEST(CallbackDispatcher, AHeldTasksEventsWaitForItsRelease) {
  CallbackDispatcher d(DeliveryOptions{}, [](TaskId) {});
  std::mutex mu;
  std::vector<int> held_seen;
  d.Hold(5);
  for (int i = 0; i < 3; ++i) {
    d.Post(5, Tier::kOfflineIndexing, [&, i] {
      std::lock_guard<std::mutex> lock(mu);
      held_seen.push_back(i);
    });
  }
  std::promise<void> other;
  d.Post(6, Tier::kOfflineIndexing, [&] { other.set_value(); });
  other.get_future().wait();
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(held_seen.empty());
  }
  d.Release(5);
  d.WaitUntilIdle();
  EXPECT_EQ(held_seen, (std::vector<int>{0, 1, 2}));
  d.Hold(9);  // held with nothing posted, then released: nothing left behind
  d.Release(9);
  d.WaitUntilIdle();
}

TEST(CallbackDispatcher, ShutdownDeliversWhatWasPostedThenRefusesMore) {
  std::atomic<int> ran{0};
  CallbackDispatcher d(DeliveryOptions{}, [](TaskId) {});
  for (int i = 0; i < 50; ++i) d.Post(i % 3, Tier::kForegroundChat, [&] { ++ran; });
  d.Shutdown();
  EXPECT_EQ(ran, 50);
  d.Post(1, Tier::kForegroundChat, [&] { ++ran; });
  d.WaitUntilIdle();
  EXPECT_EQ(ran, 50);
}

}  // namespace
}  // namespace valet
