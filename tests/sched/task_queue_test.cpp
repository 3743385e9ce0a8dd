#include "sched/task_queue.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>

namespace valet {
namespace {

TEST(TaskQueue, OrdersByTierThenTicket) {
  TaskQueue q;
  q.Push(1, {Tier::kOfflineIndexing, 1});
  q.Push(2, {Tier::kBackgroundSummary, 2});
  q.Push(3, {Tier::kForegroundChat, 3});
  q.Push(4, {Tier::kBackgroundSummary, 4});
  q.Push(5, {Tier::kForegroundChat, 5});
  std::vector<TaskId> order;
  while (!q.empty()) {
    order.push_back(q.Top());
    q.Pop();
  }
  EXPECT_EQ(order, (std::vector<TaskId>{3, 5, 2, 4, 1}));
}

TEST(TaskQueue, EraseUpdateAndCounts) {
  TaskQueue q;
  for (TaskId id = 1; id <= 6; ++id) q.Push(id, {static_cast<Tier>(id % 2 == 0 ? 2 : 3), static_cast<uint64_t>(id)});
  EXPECT_EQ(q.CountInTier(Tier::kBackgroundSummary), 3u);
  EXPECT_TRUE(q.Erase(2));
  EXPECT_FALSE(q.Erase(2));
  EXPECT_EQ(q.Top(), 4);
  // Re-keying to the back of the tier: the next in FIFO order leads.
  EXPECT_TRUE(q.Update(4, {Tier::kBackgroundSummary, 100}));
  EXPECT_EQ(q.Top(), 6);
  EXPECT_FALSE(q.Update(42, {Tier::kForegroundChat, 1}));
  EXPECT_TRUE(q.Valid());
  EXPECT_EQ(q.CountInTier(Tier::kBackgroundSummary), 2u);
}

// 100,000 tasks through random pushes, pops, erases and re-keys, checked
// against an ordered set after every operation.
TEST(TaskQueue, HundredThousandTasksMatchAnOrderedSet) {
  TaskQueue q;
  std::set<std::pair<std::pair<int, uint64_t>, TaskId>> ref;
  std::map<TaskId, QueueKey> keys;
  std::mt19937_64 rng(12345);
  uint64_t ticket = 0;
  TaskId next_id = 1;
  auto ref_key = [](TaskId id, QueueKey k) { return std::make_pair(std::make_pair(static_cast<int>(k.tier), k.ticket), id); };
  while (next_id <= 100000 || !ref.empty()) {
    const int op = static_cast<int>(rng() % 10);
    if (next_id <= 100000 && (op < 5 || ref.empty())) {
      const QueueKey k{static_cast<Tier>(rng() % kNumTiers), ++ticket};
      q.Push(next_id, k);
      ref.insert(ref_key(next_id, k));
      keys[next_id] = k;
      ++next_id;
    } else if (op < 7 && !ref.empty()) {
      ASSERT_EQ(q.Top(), ref.begin()->second);
      keys.erase(ref.begin()->second);
      ref.erase(ref.begin());
      q.Pop();
    } else if (!ref.empty()) {
      auto it = keys.begin();
      std::advance(it, static_cast<long>(rng() % std::min<size_t>(keys.size(), 64)));
      const TaskId id = it->first;
      ref.erase(ref_key(id, it->second));
      if (op == 7) {
        ASSERT_TRUE(q.Erase(id));
        keys.erase(it);
      } else {
        const QueueKey k{static_cast<Tier>(rng() % kNumTiers), ++ticket};
        ASSERT_TRUE(q.Update(id, k));
        ref.insert(ref_key(id, k));
        it->second = k;
      }
    }
    ASSERT_EQ(q.size(), ref.size());
    if (!ref.empty()) {
      ASSERT_EQ(q.Top(), ref.begin()->second);
    }
  }
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(q.Valid());
}

}  // namespace
}  // namespace valet
