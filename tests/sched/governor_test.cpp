#include "sched/governor.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace valet {
namespace {

TEST(Lifecycle, FollowsAndroidOrder) {
  LifecycleState s = LifecycleState::kDestroyed;
  for (LifecycleEvent e : {LifecycleEvent::kOnCreate, LifecycleEvent::kOnStart, LifecycleEvent::kOnResume,
                           LifecycleEvent::kOnPause, LifecycleEvent::kOnStop, LifecycleEvent::kOnDestroy}) {
    Result<LifecycleState> next = NextLifecycleState(s, e);
    ASSERT_TRUE(next.ok()) << LifecycleEventName(e);
    s = *next;
  }
  EXPECT_EQ(s, LifecycleState::kDestroyed);
}

TEST(Lifecycle, OutOfOrderIsAnErrorAndChangesNothing) {
  Governor g(BudgetTable::Defaults(), LifecycleState::kResumed);
  EXPECT_EQ(g.OnLifecycleEvent(LifecycleEvent::kOnStart).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.OnLifecycleEvent(LifecycleEvent::kOnDestroy).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.OnLifecycleEvent(static_cast<LifecycleEvent>(99)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.state(), LifecycleState::kResumed);
  EXPECT_TRUE(g.OnLifecycleEvent(LifecycleEvent::kOnPause).ok());
  EXPECT_EQ(g.state(), LifecycleState::kStarted);
}

TEST(Governor, DefaultBudgetsFollowTheDesign) {
  const BudgetTable t = BudgetTable::Defaults();
  const TierBudget& fg = t.at(LifecycleState::kResumed, Tier::kForegroundChat);
  const TierBudget& bg_resumed = t.at(LifecycleState::kResumed, Tier::kOfflineIndexing);
  const TierBudget& bg_created = t.at(LifecycleState::kCreated, Tier::kOfflineIndexing);
  EXPECT_EQ(fg.turn_tokens, 0);  // uninterrupted
  EXPECT_GT(bg_resumed.turn_tokens, 0);
  EXPECT_LT(bg_resumed.prefill_chunk, bg_created.prefill_chunk);
  EXPECT_TRUE(bg_created.turn_tokens == 0 || bg_created.turn_tokens > bg_resumed.turn_tokens);
  for (int tier = 0; tier < kNumTiers; ++tier) {
    EXPECT_EQ(t.at(LifecycleState::kDestroyed, static_cast<Tier>(tier)).state_cap_tokens, 0);
    EXPECT_EQ(t.at(LifecycleState::kResumed, static_cast<Tier>(tier)).state_cap_tokens, kUnlimitedTokens);
  }
}

TEST(Governor, StateCapsResetOnEveryLifecycleEvent) {
  BudgetTable t = BudgetTable::Defaults();
  t.at(LifecycleState::kResumed, Tier::kOfflineIndexing).state_cap_tokens = 5;
  Governor g(t, LifecycleState::kResumed);
  EXPECT_TRUE(g.MayRun(Tier::kOfflineIndexing));
  g.Charge(Tier::kOfflineIndexing, 4);
  EXPECT_TRUE(g.MayRun(Tier::kOfflineIndexing));
  g.Charge(Tier::kOfflineIndexing, 1);
  EXPECT_FALSE(g.MayRun(Tier::kOfflineIndexing));
  EXPECT_TRUE(g.MayRun(Tier::kForegroundChat));
  ASSERT_TRUE(g.OnLifecycleEvent(LifecycleEvent::kOnPause).ok());
  EXPECT_TRUE(g.MayRun(Tier::kOfflineIndexing));
  EXPECT_EQ(g.used(Tier::kOfflineIndexing), 0);
}

TEST(BudgetTableJson, OverridesNamedEntriesOnly) {
  Result<BudgetTable> t = ParseBudgetTable(R"({"RESUMED": {"OFFLINE_INDEXING":
      {"turn_tokens": 8, "state_cap_tokens": 100, "prefill_chunk": 16, "threads": 1}},
      "CREATED": {"FOREGROUND_CHAT": {"threads": 2}}})");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const TierBudget& b = t->at(LifecycleState::kResumed, Tier::kOfflineIndexing);
  EXPECT_EQ(b.turn_tokens, 8);
  EXPECT_EQ(b.state_cap_tokens, 100);
  EXPECT_EQ(b.prefill_chunk, 16);
  EXPECT_EQ(b.threads, 1);
  EXPECT_EQ(t->at(LifecycleState::kCreated, Tier::kForegroundChat).threads, 2);
  const BudgetTable d = BudgetTable::Defaults();
  EXPECT_EQ(t->at(LifecycleState::kCreated, Tier::kForegroundChat).prefill_chunk,
            d.at(LifecycleState::kCreated, Tier::kForegroundChat).prefill_chunk);
}

TEST(BudgetTableJson, ThreadsPriorityAndCores) {
  const BudgetTable d = BudgetTable::Defaults();
  EXPECT_EQ(d.at(LifecycleState::kResumed, Tier::kForegroundChat).nice, 0);
  EXPECT_EQ(d.at(LifecycleState::kResumed, Tier::kForegroundChat).cores, CoreClass::kPerformance);
  EXPECT_EQ(d.at(LifecycleState::kCreated, Tier::kOfflineIndexing).nice, kBackgroundNice);
  EXPECT_EQ(d.at(LifecycleState::kCreated, Tier::kBackgroundSummary).cores, CoreClass::kEfficiency);
  EXPECT_EQ(d.at(LifecycleState::kStarted, Tier::kBackgroundSummary).policy, SchedPolicy::kIdle);
  EXPECT_EQ(d.at(LifecycleState::kStarted, Tier::kInlineSuggestion).policy, SchedPolicy::kNormal);
  Result<BudgetTable> t = ParseBudgetTable(
      R"({"RESUMED": {"BACKGROUND_SUMMARY": {"nice": 19, "cores": "all", "policy": "batch"},
                      "FOREGROUND_CHAT": {"cores": "efficiency"}}})");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->at(LifecycleState::kResumed, Tier::kBackgroundSummary).nice, 19);
  EXPECT_EQ(t->at(LifecycleState::kResumed, Tier::kBackgroundSummary).cores, CoreClass::kAll);
  EXPECT_EQ(t->at(LifecycleState::kResumed, Tier::kBackgroundSummary).policy, SchedPolicy::kBatch);
  EXPECT_EQ(t->at(LifecycleState::kResumed, Tier::kForegroundChat).cores, CoreClass::kEfficiency);
  for (const char* bad : {R"({"RESUMED": {"OFFLINE_INDEXING": {"nice": -1}}})",
                          R"({"RESUMED": {"OFFLINE_INDEXING": {"nice": 20}}})",
                          R"({"RESUMED": {"OFFLINE_INDEXING": {"cores": "big"}}})",
                          R"({"RESUMED": {"OFFLINE_INDEXING": {"cores": 1}}})",
                          R"({"RESUMED": {"OFFLINE_INDEXING": {"policy": "fifo"}}})"}) {
    Result<BudgetTable> r = ParseBudgetTable(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(BudgetTableJson, RejectsBadInput) {
  for (const char* bad : {R"([])", R"({"PAUSED": {}})", R"({"RESUMED": {"TIER9": {}}})",
                          R"({"RESUMED": {"FOREGROUND_CHAT": {"turn_tokens": -1}}})",
                          R"({"RESUMED": {"FOREGROUND_CHAT": {"prefill_chunk": 0}}})",
                          R"({"RESUMED": {"FOREGROUND_CHAT": {"threads": 1.5}}})",
                          R"({"RESUMED": {"FOREGROUND_CHAT": {"speed": 1}}})", R"({"RESUMED": )"}) {
    EXPECT_FALSE(ParseBudgetTable(bad).ok()) << bad;
  }
}

TEST(BudgetTableJson, LoadsFromAFile) {
  const std::string path = ::testing::TempDir() + "/valet_budget_test.json";
  {
    std::ofstream f(path);
    f << R"({"STARTED": {"INLINE_SUGGESTION": {"turn_tokens": 3}}})";
  }
  Result<BudgetTable> t = LoadBudgetTable(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->at(LifecycleState::kStarted, Tier::kInlineSuggestion).turn_tokens, 3);
  std::remove(path.c_str());
  EXPECT_EQ(LoadBudgetTable(path).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace valet
