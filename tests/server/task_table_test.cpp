// The server's task table: per-tier limits exact under concurrent submits
// that run outside its lock, and callbacks that beat the submitter's record.
#include "server/task_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace valet {
namespace {

constexpr Tier kTier = Tier::kOfflineIndexing;

int64_t Unfinished(const TaskTable& table) {
  int64_t n = 0;
  for (const TaskEntry& e : table.Entries()) n += e.tier == kTier && !IsTerminal(e.state) ? 1 : 0;
  return n;
}

TEST(TaskTableTest, SlotsHeldBySubmitsInProgressCountAgainstTheLimit) {
  TaskTable table;
  std::shared_ptr<TaskSlot> a = table.Reserve(kTier, 2, "completions");
  std::shared_ptr<TaskSlot> b = table.Reserve(kTier, 2, "completions");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(table.Reserve(kTier, 2, "completions"), nullptr);
  // Another tier has its own limit.
  std::shared_ptr<TaskSlot> chat = table.Reserve(Tier::kForegroundChat, 1, "chat.completions");
  ASSERT_TRUE(chat);
  table.Record(*chat, 9);
  table.SetState(*chat, 9, TaskState::kDone);
  // A failed submit frees its slot and leaves nothing behind.
  table.Release(*b);
  EXPECT_EQ(table.Entries().size(), 1u);
  std::shared_ptr<TaskSlot> c = table.Reserve(kTier, 2, "completions");
  ASSERT_TRUE(c);
  table.Record(*a, 1);
  table.Record(*c, 2);
  EXPECT_EQ(Unfinished(table), 2);
  EXPECT_EQ(table.Reserve(kTier, 2, "completions"), nullptr);
  table.SetState(*a, 1, TaskState::kDone);
  EXPECT_NE(table.Reserve(kTier, 2, "completions"), nullptr);
}

TEST(TaskTableTest, TheFirstCallbackRecordsTheTask) {
  TaskTable table;
  // The scheduler may run a task's callbacks, up to its end, before Submit
  // returns its id to the submitter.
  std::shared_ptr<TaskSlot> slot = table.Reserve(kTier, 1, "completions");
  ASSERT_TRUE(slot);
  table.SetState(*slot, 5, TaskState::kDecoding);
  table.AddToken(*slot, 5);
  table.AddToken(*slot, 5);
  std::vector<TaskEntry> entries = table.Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].state, TaskState::kDecoding);
  EXPECT_EQ(entries[0].tokens, 2);
  EXPECT_EQ(entries[0].endpoint, "completions");
  table.SetState(*slot, 5, TaskState::kDone);
  table.SetState(*slot, 5, TaskState::kDone);  // on_state, then on_done
  table.Record(*slot, 5);                      // the submitter, last
  entries = table.Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].state, TaskState::kDone);
  EXPECT_EQ(entries[0].tokens, 2);
  EXPECT_NE(table.Reserve(kTier, 1, "completions"), nullptr);  // finished: its slot is free
}

TEST(TaskTableTest, OnlyTheNewestFinishedTasksAreKept) {
  TaskTable table;
  const TaskId n = TaskTable::kFinishedKept + 3;
  for (TaskId id = 1; id <= n; ++id) {
    std::shared_ptr<TaskSlot> slot = table.Reserve(kTier, 1, "completions");
    ASSERT_TRUE(slot);
    table.Record(*slot, id);
    table.SetState(*slot, id, TaskState::kDone);
    table.AddToken(*slot, id);  // a stray late callback changes nothing
  }
  const std::vector<TaskEntry> entries = table.Entries();
  ASSERT_EQ(entries.size(), TaskTable::kFinishedKept);
  EXPECT_EQ(entries.front().id, n - TaskTable::kFinishedKept + 1);
  EXPECT_EQ(entries.back().id, n);
}

// Many submitters and a finisher thread: the tier never has more unfinished
// tasks than its limit, and every finish is seen, before the record or after.
TEST(TaskTableTest, LimitIsExactUnderConcurrency) {
  constexpr int kLimit = 3;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 200;
  TaskTable table;
  std::atomic<TaskId> next{1};
  std::atomic<int> admitted_now{0};
  std::atomic<int> most{0};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<std::shared_ptr<TaskSlot>, TaskId>> to_finish;
  bool submitting = true;
  auto finish = [&](TaskSlot& slot, TaskId id) {
    admitted_now.fetch_sub(1);
    table.SetState(slot, id, TaskState::kDone);
  };
  std::thread finisher([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return !to_finish.empty() || !submitting; });
      if (to_finish.empty()) return;
      std::vector<std::pair<std::shared_ptr<TaskSlot>, TaskId>> batch;
      batch.swap(to_finish);
      lock.unlock();
      for (auto& [slot, id] : batch) finish(*slot, id);
      lock.lock();
    }
  });
  std::atomic<int> accepted{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t) {
    submitters.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::shared_ptr<TaskSlot> slot = table.Reserve(kTier, kLimit, "completions");
        if (!slot) continue;
        accepted.fetch_add(1);
        const int now = admitted_now.fetch_add(1) + 1;
        for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
        }
        const TaskId id = next.fetch_add(1);
        if ((i + t) % 5 == 0) {  // the submit failed
          admitted_now.fetch_sub(1);
          table.Release(*slot);
          continue;
        }
        if ((i + t) % 3 == 0) {
          finish(*slot, id);  // finished before the submitter records it
        } else {
          std::lock_guard<std::mutex> lock(mu);
          to_finish.emplace_back(slot, id);
          cv.notify_one();
        }
        table.Record(*slot, id);
      }
    });
  }
  for (std::thread& t : submitters) t.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    submitting = false;
    cv.notify_one();
  }
  finisher.join();
  EXPECT_LE(most.load(), kLimit);
  EXPECT_GT(accepted.load(), 0);
  EXPECT_EQ(Unfinished(table), 0);
  std::vector<std::shared_ptr<TaskSlot>> held;
  for (int i = 0; i < kLimit; ++i) {
    held.push_back(table.Reserve(kTier, kLimit, "completions"));
    EXPECT_NE(held.back(), nullptr);
  }
  EXPECT_EQ(table.Reserve(kTier, kLimit, "completions"), nullptr);
}

}  // namespace
}  // namespace valet
