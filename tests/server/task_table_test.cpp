// The server's task table: per-tier limits exact under concurrent submits
// that run outside its lock, and callbacks that beat their task's record.
#include "server/task_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace valet {
namespace {

constexpr Tier kTier = Tier::kOfflineIndexing;

int64_t Unfinished(const TaskTable& table) {
  int64_t n = 0;
  for (const TaskEntry& e : table.Entries()) n += e.tier == kTier && !IsTerminal(e.state) ? 1 : 0;
  return n;
}

// A gate that submits wait at, so they can be held while others arrive.
class Gate {
 public:
  void Arrive() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  void WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return waiting_ >= n; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

TEST(TaskTableTest, SubmitsInProgressHoldTheirSlots) {
  TaskTable table;
  Gate gate;
  std::vector<std::thread> submitters;
  for (TaskId id : {1, 2}) {
    submitters.emplace_back([&, id] {
      Result<TaskId> out = Internal("unset");
      const bool ran = table.SubmitIfRoom(kTier, 2, "completions", [&]() -> Result<TaskId> {
        gate.Arrive();
        return id;
      }, &out);
      EXPECT_TRUE(ran && out.ok());
    });
  }
  gate.WaitFor(2);  // both are inside submit, outside the table's lock
  bool called = false;
  Result<TaskId> out = Internal("unset");
  EXPECT_FALSE(table.SubmitIfRoom(kTier, 2, "completions", [&]() -> Result<TaskId> {
    called = true;
    return 3;
  }, &out));
  EXPECT_FALSE(called);
  // Another tier has its own limit; callbacks are not blocked meanwhile.
  EXPECT_TRUE(table.SubmitIfRoom(Tier::kForegroundChat, 1, "chat", [] { return Result<TaskId>(TaskId{9}); }, &out));
  table.SetState(9, TaskState::kDone);
  gate.Open();
  for (std::thread& t : submitters) t.join();
  EXPECT_EQ(Unfinished(table), 2);
  table.SetState(1, TaskState::kDone);
  EXPECT_TRUE(table.SubmitIfRoom(kTier, 2, "completions", [] { return Result<TaskId>(TaskId{4}); }, &out));
}

TEST(TaskTableTest, CallbacksBeforeTheRecordAreKept) {
  TaskTable table;
  Result<TaskId> out = Internal("unset");
  // The scheduler may run a task's callbacks before Submit returns its id.
  ASSERT_TRUE(table.SubmitIfRoom(kTier, 1, "completions", [&]() -> Result<TaskId> {
    table.SetState(5, TaskState::kDecoding);
    table.AddToken(5);
    table.AddToken(5);
    return 5;
  }, &out));
  std::vector<TaskEntry> entries = table.Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].state, TaskState::kDecoding);
  EXPECT_EQ(entries[0].tokens, 2);
  EXPECT_EQ(entries[0].endpoint, "completions");
  // Finished before it was recorded: its slot is free at once.
  ASSERT_TRUE(table.SubmitIfRoom(kTier, 2, "completions", [&]() -> Result<TaskId> {
    table.SetState(6, TaskState::kFailed);
    table.SetState(6, TaskState::kFailed);  // on_state, then on_done
    return 6;
  }, &out));
  EXPECT_EQ(Unfinished(table), 1);
  EXPECT_EQ(table.Entries().back().state, TaskState::kFailed);
  // A refused submit leaves nothing behind.
  ASSERT_TRUE(table.SubmitIfRoom(kTier, 2, "completions", [] { return Result<TaskId>(InvalidArgument("no")); }, &out));
  EXPECT_FALSE(out.ok());
  EXPECT_EQ(table.Entries().size(), 2u);
  // Without a submit in flight, callbacks for unknown ids change nothing.
  table.SetState(77, TaskState::kDone);
  table.AddToken(77);
  EXPECT_EQ(table.Entries().size(), 2u);
}

// Many submitters and a finisher thread: the tier never has more unfinished
// tasks than its limit, and every finish is seen, early or not.
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
  std::vector<TaskId> to_finish;
  bool submitting = true;
  auto finish = [&](TaskId id) {
    admitted_now.fetch_sub(1);
    table.SetState(id, TaskState::kDone);
  };
  std::thread finisher([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return !to_finish.empty() || !submitting; });
      if (to_finish.empty()) return;
      std::vector<TaskId> batch;
      batch.swap(to_finish);
      lock.unlock();
      for (TaskId id : batch) finish(id);
      lock.lock();
    }
  });
  std::atomic<int> accepted{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t) {
    submitters.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        Result<TaskId> out = Internal("unset");
        const bool ran = table.SubmitIfRoom(kTier, kLimit, "completions", [&]() -> Result<TaskId> {
          const int now = admitted_now.fetch_add(1) + 1;
          for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
          }
          const TaskId id = next.fetch_add(1);
          if ((i + t) % 3 == 0) {
            finish(id);  // finished before the table records it
          } else {
            std::lock_guard<std::mutex> lock(mu);
            to_finish.push_back(id);
            cv.notify_one();
          }
          return id;
        }, &out);
        if (ran) accepted.fetch_add(1);
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
  Result<TaskId> out = Internal("unset");
  for (int i = 0; i < kLimit; ++i) {
    EXPECT_TRUE(table.SubmitIfRoom(kTier, kLimit, "completions", [&] { return Result<TaskId>(next.fetch_add(1)); },
                                   &out));
  }
  EXPECT_FALSE(table.SubmitIfRoom(kTier, kLimit, "completions", [&] { return Result<TaskId>(TaskId{0}); }, &out));
}

}  // namespace
}  // namespace valet
