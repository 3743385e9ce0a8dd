// The recorder keeps bounded history: live tasks always, the last finished
// ones, the last steps and latencies; aggregates count everything.
#include "sched/recorder.h"

#include <gtest/gtest.h>

namespace valet {
namespace {

TEST(Recorder, KeepsLiveTasksAndOnlyTheLastFinishedOnes) {
  Recorder r(RecorderLimits{3, 2, 2});
  std::vector<TaskId> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(r.Register(Tier::kOfflineIndexing, i));
  for (int i = 0; i < 4; ++i) r.SetState(ids[static_cast<size_t>(i)], TaskState::kDone);  // ids[4] stays live
  EXPECT_FALSE(r.State(ids[0]).has_value());
  EXPECT_FALSE(r.State(ids[1]).has_value());
  EXPECT_TRUE(r.Registered(ids[0]));
  EXPECT_FALSE(r.Registered(ids[4] + 1));
  EXPECT_EQ(*r.State(ids[2]), TaskState::kDone);
  EXPECT_EQ(*r.State(ids[3]), TaskState::kDone);
  EXPECT_EQ(*r.State(ids[4]), TaskState::kQueued);
  const Status dropped = r.Metrics(ids[0]).status();
  EXPECT_EQ(dropped.code(), StatusCode::kNotFound);
  EXPECT_NE(dropped.message().find("dropped"), std::string::npos);
  EXPECT_EQ(r.Stats().submitted, 5);  // aggregates count everything
}

TEST(Recorder, KeepsTheLastStepsAndLatencies) {
  Recorder r(RecorderLimits{3, 2, 2});
  for (int i = 0; i < 10; ++i) {
    StepTrace s;
    s.start = i;
    r.AddStep(s);
    r.UpdateStats([&](SchedulerStats& st) {
      ++st.steps;
      st.preemption_latencies.push_back(i);
    });
  }
  const std::vector<StepTrace> steps = r.Steps();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps.front().start, 7.0);
  const SchedulerStats st = r.Stats();
  EXPECT_EQ(st.steps, 10);
  EXPECT_LE(st.preemption_latencies.size(), 4u);
  EXPECT_EQ(st.preemption_latencies.back(), 9.0);
}

}  // namespace
}  // namespace valet
