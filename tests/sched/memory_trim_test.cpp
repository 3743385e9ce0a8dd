// Trim-memory requests and run-time budgets on the core: what each level
// frees, that nothing is cancelled or changed in any task's output, and that
// the app coming back to the front gives the memory back.
#include <gtest/gtest.h>

#include "sched/trim_policy.h"
#include "sched_test_util.h"

namespace valet {
using namespace valet::testing;
namespace {

using testing::ExpectedAlone;
using testing::Harness;

TEST(TrimLevel, NamedLevelsAndNewerOnesRoundDown) {
  EXPECT_EQ(TrimLevelFromInt(4).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*TrimLevelFromInt(5), TrimLevel::kRunningModerate);
  EXPECT_EQ(*TrimLevelFromInt(15), TrimLevel::kRunningCritical);
  EXPECT_EQ(*TrimLevelFromInt(39), TrimLevel::kUiHidden);
  EXPECT_EQ(*TrimLevelFromInt(40), TrimLevel::kBackground);
  EXPECT_EQ(*TrimLevelFromInt(1000), TrimLevel::kComplete);
  EXPECT_STREQ(TrimLevelName(TrimLevel::kUiHidden), "UI_HIDDEN");
}

TEST(TrimLevel, ActionsGrowWithTheLevel) {
  EXPECT_TRUE(TrimActionsFor(TrimLevel::kRunningModerate).demote_snapshots);
  EXPECT_FALSE(TrimActionsFor(TrimLevel::kRunningModerate).evict_parked);
  EXPECT_TRUE(TrimActionsFor(TrimLevel::kUiHidden).evict_parked);
  EXPECT_TRUE(TrimActionsFor(TrimLevel::kUiHidden).parked_to_disk);
  EXPECT_FALSE(TrimActionsFor(TrimLevel::kRunningCritical).parked_to_disk);  // the user may be waiting
  EXPECT_FALSE(TrimActionsFor(TrimLevel::kUiHidden).shrink);
  EXPECT_TRUE(TrimActionsFor(TrimLevel::kRunningCritical).shrink);
  EXPECT_FALSE(TrimActionsFor(TrimLevel::kUiHidden).drop_parked_prefixes);
  EXPECT_TRUE(TrimActionsFor(TrimLevel::kRunningCritical).drop_parked_prefixes);
  EXPECT_TRUE(TrimActionsFor(TrimLevel::kBackground).shrink);
  EXPECT_FALSE(TrimActionsFor(TrimLevel::kModerate).park_running);
  EXPECT_TRUE(TrimActionsFor(TrimLevel::kComplete).park_running);
  EXPECT_FALSE(TrimActionsFor(TrimLevel::kUiHidden).weights.has_value());
  EXPECT_EQ(TrimActionsFor(TrimLevel::kRunningCritical).weights, WeightsAdvice::kCold);
  EXPECT_EQ(TrimActionsFor(TrimLevel::kComplete).weights, WeightsAdvice::kPageOut);
}

// A summary runs a few steps (an indexer waits behind it); a chat arrives and
// the summary is parked (how, the policy says).
struct Parked {
  Harness h;
  TaskId a = 0, b = 0;
  explicit Parked(ParkPolicy policy) : h({}, Options(policy)) {
    a = h.Submit(Tier::kOfflineIndexing, "index this document", 12, 3);
    b = h.Submit(Tier::kBackgroundSummary, "summarize that one", 12, 4);
    for (int i = 0; i < 4; ++i) h.core.RunOneStep();
    h.Submit(Tier::kForegroundChat, "hello", 4, 5);
    h.core.RunOneStep();  // the chat's first step parks the summary
  }
  static SchedulerOptions Options(ParkPolicy policy) {
    SchedulerOptions o;
    o.park_policy = policy;
    return o;
  }
  void ExpectOutputsAlone() {
    h.core.RunUntilIdle();
    EXPECT_EQ(h.out[a].tokens, ExpectedAlone(h.engine, "index this document", 3, 12));
    EXPECT_EQ(h.out[b].tokens, ExpectedAlone(h.engine, "summarize that one", 4, 12));
    EXPECT_EQ(h.core.recorder().Stats().cancelled, 0);
    EXPECT_EQ(h.core.recorder().Stats().failed, 0);
  }
};

TEST(MemoryTrim, RunningModerateMovesRamSnapshotsToDisk) {
  Parked p(ParkPolicy::kForceSnapshotRam);
  ASSERT_GT(p.h.engine.memory().snapshot_ram_bytes, 0u);
  const size_t ram = p.h.engine.memory().snapshot_ram_bytes;
  ASSERT_TRUE(p.h.core.memory().OnTrimMemory(TrimLevel::kRunningModerate).ok());
  EXPECT_EQ(p.h.engine.memory().snapshot_ram_bytes, 0u);
  EXPECT_EQ(p.h.engine.memory().snapshot_disk_bytes, ram);
  p.ExpectOutputsAlone();
}

TEST(MemoryTrim, UiHiddenEvictsParkedKvButNotTheRunningTask) {
  Parked p(ParkPolicy::kAuto);  // a roomy pool: parked resident
  const size_t used = p.h.engine.memory().pool_used_bytes;
  ASSERT_TRUE(p.h.core.memory().OnTrimMemory(TrimLevel::kUiHidden).ok());
  EXPECT_LT(p.h.engine.memory().pool_used_bytes, used);
  const SchedulerStats s = p.h.core.recorder().Stats();
  EXPECT_EQ(s.parks_by_kind[static_cast<size_t>(ParkKind::kResident)], 1);
  EXPECT_EQ(s.parks_by_kind[static_cast<size_t>(ParkKind::kPartial)], 1);
  p.ExpectOutputsAlone();
}

TEST(MemoryTrim, BackgroundShrinksThePoolUntilTheAppComesBack) {
  Parked p(ParkPolicy::kAuto);
  const size_t budget = p.h.engine.memory().pool_capacity_bytes;
  ASSERT_TRUE(p.h.core.memory().OnTrimMemory(TrimLevel::kBackground).ok());
  const size_t trimmed = p.h.engine.memory().pool_capacity_bytes;
  EXPECT_LT(trimmed, budget);
  // Never below what a live task needs to run alone (with its copy-on-write block).
  EXPECT_GE(trimmed, p.h.engine.KvBytesFor(static_cast<int32_t>(p.h.engine.Tokenize("index this document", true).size()) + 12 + 1));
  EXPECT_EQ(p.h.core.memory_budgets().pool_bytes, budget);  // the app's budget is unchanged
  for (LifecycleEvent e : {LifecycleEvent::kOnPause, LifecycleEvent::kOnStop, LifecycleEvent::kOnStart}) {
    ASSERT_TRUE(p.h.core.OnLifecycleEvent(e).ok());
  }
  EXPECT_EQ(p.h.engine.memory().pool_capacity_bytes, budget);
  p.ExpectOutputsAlone();
}

TEST(MemoryTrim, CriticalEvictsParkedTasksFullyWhenTheyHoldAPrefixAlone) {
  Harness h;
  TaskRequest indexer = h.Request(Tier::kOfflineIndexing, "index this document", 12, 3);
  indexer.system_prompt = "Extract the names in this document.";
  const Result<TaskId> a = h.core.Submit(std::move(indexer));
  ASSERT_TRUE(a.ok());
  for (int i = 0; i < 4; ++i) h.core.RunOneStep();
  const TaskId chat = h.Submit(Tier::kForegroundChat, "hello", 4, 5);
  h.core.RunOneStep();  // the indexer is parked resident, holding its instruction's KV
  const size_t used = h.engine.memory().pool_used_bytes;

  ASSERT_TRUE(h.core.memory().OnTrimMemory(TrimLevel::kUiHidden).ok());
  SchedulerStats s = h.core.recorder().Stats();
  EXPECT_EQ(s.parks_by_kind[static_cast<size_t>(ParkKind::kPartial)], 1);
  EXPECT_EQ(s.parks_by_kind[static_cast<size_t>(ParkKind::kFull)], 0);  // the instruction stays cached
  const size_t after_hidden = h.engine.memory().pool_used_bytes;
  EXPECT_LT(after_hidden, used);

  ASSERT_TRUE(h.core.memory().OnTrimMemory(TrimLevel::kRunningCritical).ok());
  s = h.core.recorder().Stats();
  EXPECT_EQ(s.parks_by_kind[static_cast<size_t>(ParkKind::kFull)], 1);
  EXPECT_LT(h.engine.memory().pool_used_bytes, after_hidden);  // the instruction's blocks went too

  h.core.RunUntilIdle();
  std::vector<int32_t> history = h.engine.Tokenize("Extract the names in this document.\n\n", true);
  for (int32_t t : h.engine.Tokenize("index this document", false)) history.push_back(t);
  EXPECT_EQ(h.out[*a].tokens, ExpectedAlone(h.engine, history, 3, 12));
  EXPECT_EQ(h.out[chat].tokens, ExpectedAlone(h.engine, "hello", 5, 4));
  EXPECT_EQ(h.core.recorder().Stats().failed, 0);
}

// Under memory pressure the background's cached prefixes go first and the
// foreground chat's system prompt last; if it was taken anyway, ON_START
// computes it again, so the user's next turn finds it cached.
TEST(MemoryTrim, TheChatsSystemPromptGoesLastAndComesBackAtOnStart) {
  Harness h;
  auto chat = [&](uint64_t seed) {
    TaskRequest r = h.Request(Tier::kForegroundChat, "hello", 4, seed);
    r.system_prompt = "You are a helpful assistant.";
    const Result<TaskId> id = h.core.Submit(std::move(r));
    EXPECT_TRUE(id.ok());
    h.core.RunUntilIdle();
    return id.ok() ? *id : 0;
  };
  const TaskId first = chat(5);
  TaskRequest indexer = h.Request(Tier::kOfflineIndexing, "index this document", 6, 3);
  indexer.system_prompt = "Extract the names in this document.";
  ASSERT_TRUE(h.core.Submit(std::move(indexer)).ok());
  h.core.RunUntilIdle();
  const size_t both = h.engine.memory().pool_used_bytes;  // two unused cached prefixes

  ASSERT_TRUE(h.core.OnLifecycleEvent(LifecycleEvent::kOnPause).ok());
  ASSERT_TRUE(h.core.OnLifecycleEvent(LifecycleEvent::kOnStop).ok());
  ASSERT_TRUE(h.core.memory().OnTrimMemory(TrimLevel::kRunningCritical).ok());
  EXPECT_LT(h.engine.memory().pool_used_bytes, both) << "the indexer's instruction went";
  ASSERT_TRUE(h.core.OnLifecycleEvent(LifecycleEvent::kOnStart).ok());
  EXPECT_EQ(h.core.recorder().Stats().prefix_warm_tokens, 0) << "the system prompt stayed";
  EXPECT_EQ(h.out[first].result->metrics.cached_prompt_tokens, 0);
  const TaskId second = chat(6);
  const int32_t prefix = h.out[second].result->metrics.cached_prompt_tokens;
  ASSERT_GT(prefix, 0) << "the system prompt was kept cached";

  ASSERT_TRUE(h.core.OnLifecycleEvent(LifecycleEvent::kOnStop).ok());
  ASSERT_TRUE(h.core.memory().OnTrimMemory(TrimLevel::kComplete).ok());
  EXPECT_EQ(h.engine.memory().pool_used_bytes, 0u) << "next to be killed: nothing is kept";
  ASSERT_TRUE(h.core.OnLifecycleEvent(LifecycleEvent::kOnStart).ok());
  EXPECT_EQ(h.core.recorder().Stats().prefix_warm_tokens, prefix);
  ASSERT_TRUE(h.core.OnLifecycleEvent(LifecycleEvent::kOnResume).ok());
  const TaskId third = chat(7);
  EXPECT_EQ(h.out[third].result->metrics.cached_prompt_tokens, prefix)
      << "the turn after the return re-prefills nothing";
  EXPECT_EQ(h.core.recorder().Stats().failed, 0);
}

TEST(MemoryTrim, ASchedulerGivesATrimmedPoolBackWhenDestroyed) {
  FakeEngine engine;
  const size_t budget = engine.memory().pool_capacity_bytes;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  {
    SchedulerCore core(engine, o);
    ASSERT_TRUE(core.memory().OnTrimMemory(TrimLevel::kBackground).ok());
    ASSERT_LT(engine.memory().pool_capacity_bytes, budget);
  }
  EXPECT_EQ(engine.memory().pool_capacity_bytes, budget);
  const SchedulerCore next(engine, o);  // the engine outlives schedulers: the next one sees the app's budget
  EXPECT_EQ(next.memory_budgets().pool_bytes, budget);
}

TEST(MemoryTrim, CompleteParksEvenTheRunningTaskAndEverythingStillFinishes) {
  Parked p(ParkPolicy::kAuto);
  ASSERT_TRUE(p.h.core.memory().OnTrimMemory(TrimLevel::kComplete).ok());
  EXPECT_EQ(p.h.engine.memory().pool_used_bytes, 0u);
  p.ExpectOutputsAlone();
}

// The weights: marked the first to reclaim while running critical, given back
// at COMPLETE (nothing runs then); nothing below, and every task still ends
// as it would alone.
TEST(MemoryTrim, WeightsAreAdvisedColdWhenCriticalAndPagedOutAtComplete) {
  Parked p(ParkPolicy::kAuto);
  for (TrimLevel level : {TrimLevel::kRunningModerate, TrimLevel::kRunningLow, TrimLevel::kUiHidden}) {
    ASSERT_TRUE(p.h.core.memory().OnTrimMemory(level).ok());
  }
  EXPECT_TRUE(p.h.engine.weights_advice().empty());
  ASSERT_TRUE(p.h.core.memory().OnTrimMemory(TrimLevel::kRunningCritical).ok());
  ASSERT_TRUE(p.h.core.memory().OnTrimMemory(TrimLevel::kBackground).ok());
  ASSERT_TRUE(p.h.core.memory().OnTrimMemory(TrimLevel::kComplete).ok());
  EXPECT_EQ(p.h.engine.weights_advice(), (std::vector<WeightsAdvice>{WeightsAdvice::kCold, WeightsAdvice::kPageOut}));
  p.ExpectOutputsAlone();
}

TEST(MemoryBudgets, RefusesAPoolSmallerThanALiveTaskAndAppliesOthers) {
  Parked p(ParkPolicy::kAuto);
  MemoryBudgets tiny{p.h.engine.KvBytesFor(4), 0};
  EXPECT_EQ(p.h.core.memory().SetMemoryBudgets(tiny).code(), StatusCode::kInvalidArgument);
  MemoryBudgets smaller{p.h.engine.KvBytesFor(200), p.h.engine.KvBytesFor(10)};
  ASSERT_TRUE(p.h.core.memory().SetMemoryBudgets(smaller).ok());
  EXPECT_EQ(p.h.engine.memory().pool_capacity_bytes, smaller.pool_bytes);
  EXPECT_EQ(p.h.core.memory_budgets().pool_bytes, smaller.pool_bytes);
  // Admission now measures against the new pool.
  TaskRequest big = p.h.Request(Tier::kBackgroundSummary, std::string(150, 'x'), 60);
  EXPECT_EQ(p.h.core.Submit(std::move(big)).status().code(), StatusCode::kResourceExhausted);
  p.ExpectOutputsAlone();
}

}  // namespace
}  // namespace valet
