// The battery: the budget table's power column (defaults, JSON), the
// governor's power state, and the core parking (never cancelling) the tiers
// the battery stops, resuming them exactly where they were once it allows.
#include <gtest/gtest.h>

#include "../sched/sched_test_util.h"
#include "sched/governor.h"

namespace valet {
namespace {

using namespace valet::testing;
using testing::ExpectedAlone;
using testing::Harness;

PowerState Battery(bool charging, bool low, bool save) {
  PowerState p;
  p.charging = charging;
  p.battery_low = low;
  p.power_save = save;
  p.battery_percent = low ? 12 : 80;
  return p;
}

TEST(PowerNeedsTest, EachNeedAgainstEveryBattery) {
  for (int bits = 0; bits < 8; ++bits) {
    const bool charging = bits & 1, low = bits & 2, save = bits & 4;
    const PowerState p = Battery(charging, low, save);
    SCOPED_TRACE(bits);
    EXPECT_TRUE(PowerNeeds{}.MetBy(p));
    EXPECT_EQ((PowerNeeds{.requires_charging = true}.MetBy(p)), charging);
    EXPECT_EQ((PowerNeeds{.requires_battery_not_low = true}.MetBy(p)), charging || !low);
    EXPECT_EQ((PowerNeeds{.requires_power_save_off = true}.MetBy(p)), !save);
  }
  EXPECT_TRUE((PowerNeeds{.requires_charging = true, .requires_battery_not_low = true}.MetBy(PowerState{})))
      << "the default state constrains nothing";
}

TEST(PowerDefaults, ChatAndSuggestionsAlwaysBackgroundAsWorkManagerHasIt) {
  const BudgetTable t = BudgetTable::Defaults();
  for (Tier tier : {Tier::kForegroundChat, Tier::kInlineSuggestion}) {
    for (int bits = 0; bits < 8; ++bits) EXPECT_TRUE(t.needs(tier).MetBy(Battery(bits & 1, bits & 2, bits & 4)));
  }
  EXPECT_FALSE(t.needs(Tier::kBackgroundSummary).MetBy(Battery(true, false, true)));
  EXPECT_TRUE(t.needs(Tier::kBackgroundSummary).MetBy(Battery(false, true, false)));
  EXPECT_FALSE(t.needs(Tier::kOfflineIndexing).MetBy(Battery(false, true, false)));
  EXPECT_TRUE(t.needs(Tier::kOfflineIndexing).MetBy(Battery(true, true, false)));
  EXPECT_FALSE(t.needs(Tier::kOfflineIndexing).MetBy(Battery(true, false, true)));
}

TEST(PowerJson, TheColumnLoadsAndBadEntriesAreRefused) {
  Result<BudgetTable> t = ParseBudgetTable(
      R"({"power": {"OFFLINE_INDEXING": {"requires_charging": true, "requires_power_save_off": false},
                    "INLINE_SUGGESTION": {"requires_battery_not_low": true}}})");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->needs(Tier::kOfflineIndexing).requires_charging);
  EXPECT_FALSE(t->needs(Tier::kOfflineIndexing).requires_power_save_off);
  EXPECT_TRUE(t->needs(Tier::kOfflineIndexing).requires_battery_not_low) << "unnamed fields keep their defaults";
  EXPECT_TRUE(t->needs(Tier::kInlineSuggestion).requires_battery_not_low);
  EXPECT_TRUE(t->needs(Tier::kBackgroundSummary).requires_power_save_off);
  for (const char* bad :
       {R"({"power": {"NAPPING": {}}})", R"({"power": {"OFFLINE_INDEXING": {"requires_sunlight": true}}})",
        R"({"power": {"OFFLINE_INDEXING": {"requires_charging": 1}}})", R"({"power": [1]})",
        R"({"power": {"OFFLINE_INDEXING": true}})",
        R"({"power": {"FOREGROUND_CHAT": {"requires_charging": true}}})"}) {
    EXPECT_EQ(ParseBudgetTable(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(PowerGovernor, MayRunFollowsTheBatteryAndTheCountsCarryOn) {
  Governor g(BudgetTable::Defaults(), LifecycleState::kResumed);
  g.Charge(Tier::kOfflineIndexing, 5);
  ASSERT_TRUE(g.OnPowerState(Battery(false, true, false)).ok());
  EXPECT_FALSE(g.MayRun(Tier::kOfflineIndexing));
  EXPECT_FALSE(g.PowerAllows(Tier::kOfflineIndexing));
  EXPECT_TRUE(g.MayRun(Tier::kBackgroundSummary));
  ASSERT_TRUE(g.OnPowerState(Battery(false, false, true)).ok());
  EXPECT_FALSE(g.MayRun(Tier::kOfflineIndexing));
  EXPECT_FALSE(g.MayRun(Tier::kBackgroundSummary));
  EXPECT_TRUE(g.MayRun(Tier::kInlineSuggestion));
  EXPECT_TRUE(g.MayRun(Tier::kForegroundChat));
  PowerState bad = Battery(true, false, false);
  bad.battery_percent = 101;
  EXPECT_EQ(g.OnPowerState(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(g.power().power_save) << "a refused report changes nothing";
  ASSERT_TRUE(g.OnPowerState(Battery(true, false, false)).ok());
  EXPECT_TRUE(g.MayRun(Tier::kOfflineIndexing));
  EXPECT_EQ(g.used(Tier::kOfflineIndexing), 5);
}

TEST(PowerCore, ALowBatteryParksIndexingAndChargingResumesItExactly) {
  Harness h;
  const TaskId bg = h.Submit(Tier::kOfflineIndexing, "a long document", 40);
  for (int i = 0; i < 6; ++i) h.core.RunOneStep();
  const size_t before = h.out[bg].tokens.size();
  ASSERT_GT(before, 0u);
  ASSERT_TRUE(h.core.OnPowerState(Battery(false, true, false)).ok());
  EXPECT_TRUE(h.core.recorder().Stats().power.battery_low);
  const TaskId fg = h.Submit(Tier::kForegroundChat, "hello", 5);
  const TaskId suggestion = h.Submit(Tier::kInlineSuggestion, "sugg", 4);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[fg].result->state, TaskState::kDone);
  EXPECT_EQ(h.out[suggestion].result->state, TaskState::kDone);
  EXPECT_EQ(h.out[bg].tokens.size(), before);
  EXPECT_EQ(h.out[bg].states.back(), TaskState::kParked);
  EXPECT_EQ(h.core.recorder().Info(bg)->park_cause, ParkCause::kPower);
  EXPECT_EQ(h.out[bg].done_calls, 0);
  EXPECT_FALSE(h.core.RunOneStep());
  // Battery saver on top: still parked; the charger alone does not lift saver's needs.
  ASSERT_TRUE(h.core.OnPowerState(Battery(true, true, true)).ok());
  EXPECT_FALSE(h.core.RunOneStep());
  ASSERT_TRUE(h.core.OnPowerState(Battery(true, true, false)).ok());
  h.core.RunUntilIdle();
  ASSERT_EQ(h.out[bg].done_calls, 1);
  EXPECT_EQ(h.out[bg].result->state, TaskState::kDone);
  EXPECT_EQ(h.out[bg].tokens, ExpectedAlone(h.engine, "a long document", 7, 40));
  EXPECT_EQ(h.core.recorder().Stats().cancelled, 0);
}

TEST(PowerCore, AStartOnALowBatteryHoldsIndexingFromTheFirstStep) {
  SchedulerOptions o;
  o.initial_power = Battery(false, true, false);
  Harness h({}, o);
  EXPECT_TRUE(h.core.recorder().Stats().power.battery_low);
  const TaskId bg = h.Submit(Tier::kOfflineIndexing, "queued", 8);
  const TaskId summary = h.Submit(Tier::kBackgroundSummary, "summary", 8);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[summary].result->state, TaskState::kDone);
  EXPECT_TRUE(h.out[bg].tokens.empty());
  EXPECT_EQ(h.out[bg].done_calls, 0);
  ASSERT_TRUE(h.core.OnPowerState(PowerState{}).ok());
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[bg].tokens, ExpectedAlone(h.engine, "queued", 7, 8));
}

TEST(PowerScheduler, ABadReportIsRefusedOnTheCallersThread) {
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  PowerState bad;
  bad.battery_percent = -2;
  EXPECT_EQ(s->OnPowerState(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s->OnPowerState(Battery(false, true, true)).ok());
  o.initial_power = bad;
  EXPECT_EQ(Scheduler::Create(engine, o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace valet
