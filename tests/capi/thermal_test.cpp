// Heat: the budget table's thermal column (defaults, JSON), the governor's
// caps, and the core parking (never cancelling) background work while the
// phone is hot, resuming it exactly where it stopped once it cools.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../sched/sched_test_util.h"
#include "sched/governor.h"

namespace valet {
using namespace valet::testing;
namespace {

using testing::ExpectedAlone;
using testing::Harness;

// 0 means no cap: larger than any cap.
int64_t CapValue(int32_t threads) { return threads == 0 ? std::numeric_limits<int64_t>::max() : threads; }

TEST(ThermalDefaults, HotterNeverAllowsMoreAndChatAlwaysRuns) {
  const BudgetTable t = BudgetTable::Defaults();
  const ThermalCaps& none = t.caps(ThermalStatus::kNone);
  EXPECT_EQ(none.threads, 0);
  EXPECT_EQ(none.background_threads, 0);
  EXPECT_EQ(none.lowest_running_tier, Tier::kOfflineIndexing);
  for (int s = 1; s < kNumThermalStatuses; ++s) {
    const ThermalCaps& cooler = t.thermal[static_cast<size_t>(s - 1)];
    const ThermalCaps& hotter = t.thermal[static_cast<size_t>(s)];
    EXPECT_LE(CapValue(hotter.threads), CapValue(cooler.threads)) << s;
    EXPECT_LE(CapValue(hotter.background_threads), CapValue(cooler.background_threads)) << s;
    EXPECT_LE(hotter.lowest_running_tier, cooler.lowest_running_tier) << s;
    // Background is throttled at least as hard as the foreground.
    EXPECT_LE(CapValue(hotter.background_threads), CapValue(hotter.threads)) << s;
  }
  // The first step up already throttles background, and only background.
  EXPECT_GT(t.caps(ThermalStatus::kLight).background_threads, 0);
  EXPECT_EQ(t.caps(ThermalStatus::kLight).threads, 0);
  // Background tiers stop before the suggestion tier, which stops before chat.
  EXPECT_LT(t.caps(ThermalStatus::kSevere).lowest_running_tier, Tier::kBackgroundSummary);
  EXPECT_EQ(t.caps(ThermalStatus::kShutdown).lowest_running_tier, Tier::kForegroundChat);
}

TEST(ThermalJson, TheColumnLoadsAndBadEntriesAreRefused) {
  Result<BudgetTable> t = ParseBudgetTable(
      R"({"thermal": {"MODERATE": {"threads": 3, "background_threads": 2, "lowest_running_tier": "INLINE_SUGGESTION"}},
          "RESUMED": {"FOREGROUND_CHAT": {"threads": 4}}})");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->caps(ThermalStatus::kModerate).threads, 3);
  EXPECT_EQ(t->caps(ThermalStatus::kModerate).background_threads, 2);
  EXPECT_EQ(t->caps(ThermalStatus::kModerate).lowest_running_tier, Tier::kInlineSuggestion);
  EXPECT_EQ(t->at(LifecycleState::kResumed, Tier::kForegroundChat).threads, 4);
  // Unnamed entries keep their defaults.
  const BudgetTable d = BudgetTable::Defaults();
  EXPECT_EQ(t->caps(ThermalStatus::kSevere).threads, d.caps(ThermalStatus::kSevere).threads);

  for (const char* bad : {R"({"thermal": {"WARM": {}}})", R"({"thermal": {"LIGHT": {"fans": 1}}})",
                          R"({"thermal": {"LIGHT": {"threads": -1}}})", R"({"thermal": {"LIGHT": {"threads": 1.5}}})",
                          R"({"thermal": {"LIGHT": {"lowest_running_tier": "NAPPING"}}})",
                          R"({"thermal": {"LIGHT": {"lowest_running_tier": 2}}})", R"({"thermal": [1]})",
                          R"({"thermal": {"LIGHT": 3}})"}) {
    Result<BudgetTable> r = ParseBudgetTable(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ThermalStatusValues, RangeNamesAndHeadroom) {
  EXPECT_EQ(ThermalStatusFromInt(-1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ThermalStatusFromInt(7).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*ThermalStatusFromInt(6), ThermalStatus::kShutdown);
  EXPECT_STREQ(ThermalStatusName(ThermalStatus::kCritical), "CRITICAL");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(EffectiveThermalStatus(ThermalStatus::kNone, 1.0f), ThermalStatus::kSevere);
  EXPECT_EQ(EffectiveThermalStatus(ThermalStatus::kLight, 0.99f), ThermalStatus::kLight);
  EXPECT_EQ(EffectiveThermalStatus(ThermalStatus::kLight, -1.0f), ThermalStatus::kLight);
  EXPECT_EQ(EffectiveThermalStatus(ThermalStatus::kLight, nan), ThermalStatus::kLight);
  // A forecast never cools a status that is already hotter.
  EXPECT_EQ(EffectiveThermalStatus(ThermalStatus::kEmergency, 1.5f), ThermalStatus::kEmergency);
}

TEST(ThermalGovernor, CapsThreadsAndParksTiersFromTheBottom) {
  BudgetTable t = BudgetTable::Defaults();
  t.at(LifecycleState::kResumed, Tier::kForegroundChat).threads = 0;
  t.at(LifecycleState::kResumed, Tier::kOfflineIndexing).threads = 4;
  t.caps(ThermalStatus::kModerate) = {3, 2, Tier::kBackgroundSummary};
  Governor g(t, LifecycleState::kResumed);
  EXPECT_EQ(g.Budget(Tier::kOfflineIndexing).threads, 4);
  ASSERT_TRUE(g.OnThermalStatus(ThermalStatus::kModerate, -1.0f).ok());
  EXPECT_EQ(g.thermal_status(), ThermalStatus::kModerate);
  EXPECT_EQ(g.Budget(Tier::kForegroundChat).threads, 3);   // "all" capped
  EXPECT_EQ(g.Budget(Tier::kOfflineIndexing).threads, 2);  // the background cap is lower
  EXPECT_TRUE(g.MayRun(Tier::kBackgroundSummary));
  EXPECT_FALSE(g.MayRun(Tier::kOfflineIndexing));
  // Everything else in the budget is the lifecycle state's.
  EXPECT_EQ(g.Budget(Tier::kOfflineIndexing).turn_tokens, t.at(LifecycleState::kResumed, Tier::kOfflineIndexing).turn_tokens);
  EXPECT_EQ(g.OnThermalStatus(static_cast<ThermalStatus>(9), -1.0f).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.thermal_status(), ThermalStatus::kModerate);
  ASSERT_TRUE(g.OnThermalStatus(ThermalStatus::kNone, -1.0f).ok());
  EXPECT_TRUE(g.MayRun(Tier::kOfflineIndexing));
  EXPECT_EQ(g.Budget(Tier::kOfflineIndexing).threads, 4);
}

TEST(ThermalCore, HeatParksBackgroundWorkAndCoolingResumesItExactly) {
  Harness h;
  const TaskId bg = h.Submit(Tier::kBackgroundSummary, "a long summary", 40);
  for (int i = 0; i < 6; ++i) h.core.RunOneStep();
  const size_t before = h.out[bg].tokens.size();
  ASSERT_GT(before, 0u);
  ASSERT_TRUE(h.core.OnThermalStatus(ThermalStatus::kSevere, -1.0f).ok());
  EXPECT_EQ(h.core.recorder().Stats().thermal, ThermalStatus::kSevere);
  const TaskId fg = h.Submit(Tier::kForegroundChat, "hello", 5);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[fg].result->state, TaskState::kDone);
  EXPECT_EQ(h.out[bg].tokens.size(), before);
  EXPECT_EQ(h.out[bg].states.back(), TaskState::kParked);
  EXPECT_EQ(h.out[bg].done_calls, 0);
  EXPECT_FALSE(h.core.RunOneStep());
  ASSERT_TRUE(h.core.OnThermalStatus(ThermalStatus::kLight, -1.0f).ok());
  h.core.RunUntilIdle();
  ASSERT_EQ(h.out[bg].done_calls, 1);
  EXPECT_EQ(h.out[bg].result->state, TaskState::kDone);
  EXPECT_EQ(h.out[bg].tokens, ExpectedAlone(h.engine, "a long summary", 7, 40));
  EXPECT_EQ(h.core.recorder().Stats().cancelled, 0);
}

TEST(ThermalCore, HeatCapsTheEngineThreadsOfTheRunningTier) {
  SchedulerOptions o;
  o.budgets.at(LifecycleState::kResumed, Tier::kOfflineIndexing).threads = 3;
  o.budgets.caps(ThermalStatus::kLight) = {0, 1, Tier::kOfflineIndexing};
  Harness h({}, o);
  h.Submit(Tier::kOfflineIndexing, "indexing", 20);
  h.core.RunOneStep();
  EXPECT_EQ(h.engine.threads(), 3);
  ASSERT_TRUE(h.core.OnThermalStatus(ThermalStatus::kLight, -1.0f).ok());
  h.core.RunOneStep();
  EXPECT_EQ(h.engine.threads(), 1);
}

TEST(ThermalScheduler, BadStatusIsRefusedOnTheCallersThread) {
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  EXPECT_EQ(s->OnThermalStatus(static_cast<ThermalStatus>(7)).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s->OnThermalStatus(ThermalStatus::kCritical, std::nanf("")).ok());
}

}  // namespace
}  // namespace valet
