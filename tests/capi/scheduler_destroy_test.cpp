// Destroying the threaded Scheduler with tasks queued, parked and running:
// every accepted task gets on_done exactly once (kCancelled, kAborted
// "scheduler destroyed" unless it had finished), on a delivery thread, before
// the destructor returns, and the engine is left with no open sequence.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "testing/sched/fake_engine.h"
#include "valet/scheduler.h"

namespace valet {
using namespace valet::testing;
namespace {

struct Log {
  std::mutex mu;
  std::map<TaskId, int> done_calls;
  std::map<TaskId, TaskResult> results;
  std::map<TaskId, std::thread::id> threads;
  int refused_submits = 0;
};

TEST(SchedulerDestroy, EveryUnfinishedTaskGetsOnDoneOnce) {
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  Log log;
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  Scheduler* raw = s.get();
  // Heat keeps every tier but the chat from running, so those are surely
  // unfinished at destroy time (queued or parked), whatever the timing.
  ASSERT_TRUE(s->OnThermalStatus(ThermalStatus::kEmergency).ok());
  std::vector<TaskId> ids;
  for (int i = 0; i < 16; ++i) {
    TaskRequest r;
    r.tier = static_cast<Tier>(i % kNumTiers);
    r.prompt = "task number " + std::to_string(i);
    r.max_tokens = 100;
    r.callbacks.on_done = [&log, raw](TaskId id, const TaskResult& result) {
      std::lock_guard<std::mutex> lock(log.mu);
      ++log.done_calls[id];
      log.results[id] = result;
      log.threads[id] = std::this_thread::get_id();
      if (result.status.code() == StatusCode::kAborted) {
        TaskRequest late;
        late.prompt = "late";
        if (raw->Submit(std::move(late)).status().code() == StatusCode::kInvalidArgument) ++log.refused_submits;
      }
    };
    Result<TaskId> id = s->Submit(std::move(r));
    ASSERT_TRUE(id.ok());
    ids.push_back(*id);
  }
  s.reset();
  int aborted = 0;
  for (TaskId id : ids) {
    ASSERT_EQ(log.done_calls[id], 1) << id;
    const TaskResult& r = log.results[id];
    if (r.state == TaskState::kDone) continue;
    ++aborted;
    EXPECT_EQ(r.state, TaskState::kCancelled);
    EXPECT_EQ(r.status.code(), StatusCode::kAborted);
    EXPECT_EQ(r.status.message(), "scheduler destroyed");
    EXPECT_NE(log.threads[id], std::this_thread::get_id());
  }
  EXPECT_GE(aborted, 12);  // the twelve non-chat tasks at least
  EXPECT_EQ(log.refused_submits, aborted);
  EXPECT_EQ(engine.open_sequences(), 0u);
}

TEST(SchedulerDestroy, TaskCountsByTierFollowTheCallbacks) {
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  ASSERT_TRUE(s->OnThermalStatus(ThermalStatus::kModerate).ok());  // indexing parks
  for (Tier t : {Tier::kOfflineIndexing, Tier::kForegroundChat, Tier::kForegroundChat}) {
    TaskRequest r;
    r.tier = t;
    r.prompt = "counted";
    r.max_tokens = 5;
    ASSERT_TRUE(s->Submit(std::move(r)).ok());
  }
  // Commands apply in order: the indexing task waits (held) until this.
  ASSERT_TRUE(s->OnThermalStatus(ThermalStatus::kNone).ok());
  s->WaitIdle();
  const SchedulerStats st = s->Stats();
  EXPECT_EQ(st.tasks_by_tier[0].done, 2);
  EXPECT_EQ(st.tasks_by_tier[3].done, 1);
  for (const TierTaskCounts& c : st.tasks_by_tier) {
    EXPECT_EQ(c.active, 0);
    EXPECT_EQ(c.parked, 0);
  }
  EXPECT_GT(st.memory.pool_capacity_bytes, 0u);
}

}  // namespace
}  // namespace valet
