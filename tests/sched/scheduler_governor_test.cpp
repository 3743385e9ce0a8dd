// The governor driving the core: turns, caps, lifecycle budgets, ON_DESTROY,
// the starvation guard and the fill batching policy.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <utility>

#include "sched_test_util.h"

namespace valet {
namespace {

using testing::ExpectedAlone;
using testing::Harness;

// Run-length encoding of the step leads.
std::vector<std::pair<TaskId, int>> Runs(const std::vector<TaskId>& leads) {
  std::vector<std::pair<TaskId, int>> runs;
  for (TaskId t : leads) {
    if (runs.empty() || runs.back().first != t) runs.push_back({t, 0});
    ++runs.back().second;
  }
  return runs;
}

TEST(StarvationGuard, EqualTiersTakeTurnsWithoutPingPong) {
  Harness h;  // RESUMED: OFFLINE_INDEXING turn = 16 tokens
  ASSERT_EQ(BudgetTable::Defaults().at(LifecycleState::kResumed, Tier::kOfflineIndexing).turn_tokens, 16);
  const TaskId a = h.Submit(Tier::kOfflineIndexing, "a", 40);
  const TaskId b = h.Submit(Tier::kOfflineIndexing, "b", 40);
  h.core.RunUntilIdle();
  // One-step prompts, so a 16-token turn is 16 steps.
  const std::vector<std::pair<TaskId, int>> expected = {{a, 16}, {b, 16}, {a, 16}, {b, 16}, {a, 8}, {b, 8}};
  EXPECT_EQ(Runs(h.Leads()), expected);
  EXPECT_EQ(h.core.recorder().Metrics(a)->parks, 2);
  EXPECT_EQ(h.core.recorder().Metrics(b)->parks, 2);
  EXPECT_EQ(h.out[a].tokens, ExpectedAlone(h.engine, "a", 7, 40));
  EXPECT_EQ(h.out[b].tokens, ExpectedAlone(h.engine, "b", 7, 40));
}

TEST(StarvationGuard, ALoneTaskKeepsRunningAcrossTurnsAndForegroundRunsUninterrupted) {
  Harness h;
  const TaskId bg = h.Submit(Tier::kOfflineIndexing, "alone", 50);
  const TaskId fg1 = h.Submit(Tier::kForegroundChat, "one", 30);
  const TaskId fg2 = h.Submit(Tier::kForegroundChat, "two", 30);
  h.core.RunUntilIdle();
  const std::vector<std::pair<TaskId, int>> expected = {{fg1, 30}, {fg2, 30}, {bg, 50}};
  EXPECT_EQ(Runs(h.Leads()), expected);
  EXPECT_EQ(h.core.recorder().Metrics(bg)->parks, 0);
}

TEST(StarvationGuard, EachForegroundBurstParksBackgroundOnce) {
  Harness h;
  const TaskId bg = h.Submit(Tier::kBackgroundSummary, "steady work", 60);
  std::vector<TaskId> fgs;
  for (int i = 0; i < 3; ++i) {
    for (int s = 0; s < 5; ++s) h.core.RunOneStep();
    fgs.push_back(h.Submit(Tier::kForegroundChat, "burst", 4, static_cast<uint64_t>(i)));
  }
  h.core.RunUntilIdle();
  EXPECT_EQ(h.core.recorder().Metrics(bg)->parks, 3);
  for (TaskId fg : fgs) EXPECT_EQ(h.core.recorder().Metrics(fg)->parks, 0);
  EXPECT_EQ(h.core.recorder().Stats().preemptions, 3);
  EXPECT_EQ(h.out[bg].tokens, ExpectedAlone(h.engine, "steady work", 7, 60));
}

TEST(GovernorCore, PromptTokensCountTowardTheStateCapAtTheirWeight) {
  SchedulerOptions o;
  o.budgets.at(LifecycleState::kResumed, Tier::kOfflineIndexing).state_cap_tokens = 60;
  o.prompt_token_weight = 0.25;
  Harness h({}, o);
  const std::string doc(199, 'd');  // 200 prompt tokens with BOS: 50 budget tokens
  const TaskId bg = h.Submit(Tier::kOfflineIndexing, doc, 30);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[bg].tokens.size(), 10u);
  EXPECT_EQ(h.core.governor().used(Tier::kOfflineIndexing), 60);
  ASSERT_TRUE(h.core.OnLifecycleEvent(LifecycleEvent::kOnPause).ok());
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[bg].tokens, ExpectedAlone(h.engine, doc, 7, 30));
}

TEST(GovernorCore, StateCapParksTheTierUntilALifecycleEvent) {
  SchedulerOptions o;
  o.budgets.at(LifecycleState::kResumed, Tier::kOfflineIndexing).state_cap_tokens = 10;
  o.prompt_token_weight = 0.0;  // generated tokens only
  Harness h({}, o);
  const TaskId bg = h.Submit(Tier::kOfflineIndexing, "capped", 30);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[bg].tokens.size(), 10u);
  EXPECT_FALSE(h.core.RunOneStep());
  EXPECT_EQ(h.out[bg].states.back(), TaskState::kParked);
  // Foreground is not capped: it still runs while the background waits.
  const TaskId fg = h.Submit(Tier::kForegroundChat, "still here", 5);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[fg].result->state, TaskState::kDone);
  EXPECT_EQ(h.out[bg].tokens.size(), 10u);
  ASSERT_TRUE(h.core.OnLifecycleEvent(LifecycleEvent::kOnPause).ok());
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[bg].result->state, TaskState::kDone);
  EXPECT_EQ(h.out[bg].tokens, ExpectedAlone(h.engine, "capped", 7, 30));
}

TEST(GovernorCore, OnStopGivesBackgroundItsNormalChunk) {
  Harness h;
  const std::string doc(700, 'x');
  const TaskId bg = h.Submit(Tier::kOfflineIndexing, doc, 4);
  h.core.RunOneStep();
  h.core.RunOneStep();
  ASSERT_TRUE(h.core.OnLifecycleEvent(LifecycleEvent::kOnPause).ok());
  h.core.RunOneStep();
  ASSERT_TRUE(h.core.OnLifecycleEvent(LifecycleEvent::kOnStop).ok());
  h.core.RunOneStep();
  const std::vector<StepTrace> steps = h.core.recorder().Steps();
  ASSERT_EQ(steps.size(), 4u);
  const BudgetTable d = BudgetTable::Defaults();
  EXPECT_EQ(steps[0].items[0].tokens, d.at(LifecycleState::kResumed, Tier::kOfflineIndexing).prefill_chunk);
  EXPECT_EQ(steps[1].items[0].tokens, d.at(LifecycleState::kResumed, Tier::kOfflineIndexing).prefill_chunk);
  EXPECT_EQ(steps[2].items[0].tokens, d.at(LifecycleState::kStarted, Tier::kOfflineIndexing).prefill_chunk);
  EXPECT_EQ(steps[3].items[0].tokens, d.at(LifecycleState::kCreated, Tier::kOfflineIndexing).prefill_chunk);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[bg].tokens, ExpectedAlone(h.engine, doc, 7, 4));
}

// A prompt a quarter of a chunk or less past the chunk goes in one step
// (another step would stream the weights again for a few tokens); one further
// past is cut at the chunk.
TEST(GovernorCore, AShortRestRidesWithTheChunkBeforeIt) {
  SchedulerOptions o;
  o.budgets.at(LifecycleState::kResumed, Tier::kForegroundChat).prefill_chunk = 16;
  for (const auto& [length, first_step] : {std::pair{20, 20}, std::pair{21, 16}, std::pair{16, 16}}) {
    Harness h({}, o);
    std::string prompt;
    while (h.engine.Tokenize(prompt, true).size() < static_cast<size_t>(length)) prompt += 'x';
    ASSERT_EQ(h.engine.Tokenize(prompt, true).size(), static_cast<size_t>(length));
    const TaskId fg = h.Submit(Tier::kForegroundChat, prompt, 3);
    h.core.RunUntilIdle();
    const std::vector<StepTrace> steps = h.core.recorder().Steps();
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(steps[0].items[0].tokens, first_step) << length << " prompt tokens";
    EXPECT_EQ(h.out[fg].tokens, ExpectedAlone(h.engine, prompt, 7, 3));
  }
}

TEST(GovernorCore, ThreadsFollowTheRunningTier) {
  SchedulerOptions o;
  o.budgets.at(LifecycleState::kResumed, Tier::kOfflineIndexing).threads = 1;
  o.budgets.at(LifecycleState::kResumed, Tier::kForegroundChat).threads = 3;
  Harness h({}, o);
  h.Submit(Tier::kOfflineIndexing, "bg", 5);
  h.core.RunOneStep();
  EXPECT_EQ(h.engine.threads(), 1);
  h.Submit(Tier::kForegroundChat, "fg", 5);
  h.core.RunOneStep();
  EXPECT_EQ(h.engine.threads(), 3);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.engine.threads(), 1);
}

TEST(GovernorCore, OnDestroyParksEverythingToDiskAndLosesNothing) {
  SchedulerOptions o;
  o.initial_state = LifecycleState::kCreated;
  Harness h({}, o);
  const TaskId a = h.Submit(Tier::kOfflineIndexing, "first doc", 200);
  const TaskId b = h.Submit(Tier::kBackgroundSummary, "second doc", 100);
  for (int i = 0; i < 10; ++i) h.core.RunOneStep();
  ASSERT_TRUE(h.core.OnLifecycleEvent(LifecycleEvent::kOnDestroy).ok());
  // b ran (higher tier), a never started: only b had state to save.
  const std::vector<TimelineEvent> tl = *h.core.recorder().Timeline(b);
  EXPECT_EQ(tl.back().kind, TimelineKind::kParked);
  EXPECT_EQ(tl.back().park_kind, ParkKind::kSnapshotDisk);
  EXPECT_FALSE(h.core.RunOneStep());
  const TaskId c = h.Submit(Tier::kForegroundChat, "after destroy", 5);
  EXPECT_FALSE(h.core.RunOneStep());
  EXPECT_EQ(h.core.OnLifecycleEvent(LifecycleEvent::kOnStart).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(h.core.OnLifecycleEvent(LifecycleEvent::kOnCreate).ok());
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[a].tokens, ExpectedAlone(h.engine, "first doc", 7, 200));
  EXPECT_EQ(h.out[b].tokens, ExpectedAlone(h.engine, "second doc", 7, 100));
  EXPECT_EQ(h.out[c].tokens, ExpectedAlone(h.engine, "after destroy", 7, 5));
  EXPECT_EQ(h.core.recorder().Stats().cancelled, 0);
}

struct FillRun {
  double fg_tpot = 0;
  int64_t bg_tokens_during_fg = 0;
  size_t max_items = 0;
  bool outputs_match = true;
};

FillRun RunFillScenario(BatchMode mode) {
  SchedulerOptions o;
  o.batch_mode = mode;
  o.fill_max_cost_fraction = 0.25;
  Harness h({}, o);
  std::vector<TaskId> bgs;
  for (int i = 0; i < 3; ++i) bgs.push_back(h.Submit(Tier::kOfflineIndexing, "doc " + std::to_string(i), 200));
  for (int s = 0; s < 60; ++s) h.core.RunOneStep();  // every background task is decoding by now
  const int64_t bg_before = h.core.recorder().Stats().generated_by_tier[3];
  const TaskId fg = h.Submit(Tier::kForegroundChat, "chat turn", 40);
  while (!h.out[fg].result) h.core.RunOneStep();
  FillRun run;
  run.bg_tokens_during_fg = h.core.recorder().Stats().generated_by_tier[3] - bg_before;
  run.fg_tpot = h.core.recorder().Metrics(fg)->tpot();
  for (const StepTrace& s : h.core.recorder().Steps()) run.max_items = std::max(run.max_items, s.items.size());
  h.core.RunUntilIdle();
  run.outputs_match = h.out[fg].tokens == ExpectedAlone(h.engine, "chat turn", 7, 40);
  for (int i = 0; i < 3; ++i) {
    run.outputs_match = run.outputs_match &&
                        h.out[bgs[i]].tokens == ExpectedAlone(h.engine, "doc " + std::to_string(i), 7, 200);
  }
  return run;
}

TEST(BatchingPolicy, FillRidesWithinTheCostFractionStrictRunsAlone) {
  const FillRun strict = RunFillScenario(BatchMode::kStrict);
  const FillRun fill = RunFillScenario(BatchMode::kFill);
  EXPECT_TRUE(strict.outputs_match);
  EXPECT_TRUE(fill.outputs_match);
  EXPECT_EQ(strict.max_items, 1u);
  EXPECT_EQ(strict.bg_tokens_during_fg, 0);
  EXPECT_GT(fill.max_items, 1u);
  EXPECT_GT(fill.bg_tokens_during_fg, 0);
  // The policy's promise: riders add at most the configured fraction per step.
  EXPECT_LE(fill.fg_tpot, strict.fg_tpot * 1.25 + 1e-12);
  std::cout << "fill vs strict (fake engine): fg TPOT " << fill.fg_tpot * 1e3 << " ms vs " << strict.fg_tpot * 1e3
            << " ms; background tokens during the chat answer " << fill.bg_tokens_during_fg << " vs "
            << strict.bg_tokens_during_fg << "; max items/step " << fill.max_items << "\n";
}

// Each step asks for the OS priority and cores of the highest tier in its
// batch: background-only steps at nice 10 on the efficiency cores, steps a
// chat leads (background riders included) at the app's priority on the
// performance cores.
TEST(GovernorCore, StepsRunAtThePriorityOfTheirHighestTier) {
  SchedulerOptions o;
  o.batch_mode = BatchMode::kFill;
  o.fill_max_cost_fraction = 0.25;
  Harness h({}, o);
  for (int i = 0; i < 2; ++i) h.Submit(Tier::kOfflineIndexing, "doc " + std::to_string(i), 60);
  for (int s = 0; s < 30; ++s) h.core.RunOneStep();
  h.Submit(Tier::kForegroundChat, "chat turn", 20);
  h.Submit(Tier::kBackgroundSummary, "summary", 10);
  h.core.RunUntilIdle();
  const std::vector<StepTrace> steps = h.core.recorder().Steps();
  const std::vector<StepThreads>& asked = h.engine.step_threads_log();
  ASSERT_EQ(steps.size(), asked.size());
  const BudgetTable d = BudgetTable::Defaults();
  bool rode = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    Tier top = Tier::kOfflineIndexing;
    for (const StepTraceItem& item : steps[i].items) top = std::min(top, item.tier);
    rode = rode || (top == Tier::kForegroundChat && steps[i].items.size() > 1);
    const TierBudget& b = d.at(LifecycleState::kResumed, top);
    EXPECT_EQ(asked[i], (StepThreads{b.threads, b.nice, b.cores, b.policy})) << "step " << i;
    EXPECT_EQ(asked[i].nice, top == Tier::kForegroundChat ? 0 : kBackgroundNice) << "step " << i;
    EXPECT_EQ(asked[i].policy, top == Tier::kForegroundChat ? SchedPolicy::kNormal : SchedPolicy::kIdle) << i;
  }
  EXPECT_TRUE(rode);  // the mixed batches ran at the chat's priority
}

TEST(GovernorCore, ThePriorityOfATierComesFromItsBudget) {
  SchedulerOptions o;
  o.budgets.at(LifecycleState::kResumed, Tier::kOfflineIndexing).nice = 19;
  o.budgets.at(LifecycleState::kResumed, Tier::kOfflineIndexing).cores = CoreClass::kAll;
  o.budgets.at(LifecycleState::kResumed, Tier::kOfflineIndexing).threads = 1;
  o.budgets.at(LifecycleState::kResumed, Tier::kOfflineIndexing).policy = SchedPolicy::kBatch;
  Harness h({}, o);
  h.Submit(Tier::kOfflineIndexing, "bg", 5);
  h.core.RunOneStep();
  EXPECT_EQ(h.engine.step_threads(), (StepThreads{1, 19, CoreClass::kAll, SchedPolicy::kBatch}));
}

}  // namespace
}  // namespace valet
