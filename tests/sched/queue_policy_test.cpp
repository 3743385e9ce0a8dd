// The baseline queue policies (fifo, priority without preemption, batch-all)
// on the fake engine, and the per-tier accounting every policy shares.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "sched_test_util.h"

namespace valet {
using namespace valet::testing;
namespace {

using testing::ExpectedAlone;
using testing::Harness;

std::string Text(size_t n, char seed) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>('a' + (seed + i * 7) % 26));
  return s;
}

SchedulerOptions WithPolicy(QueuePolicy policy) {
  SchedulerOptions o;
  o.queue_policy = policy;
  return o;
}

// Task ids in the order of their first step.
std::vector<TaskId> StartOrder(const Harness& h) {
  std::vector<TaskId> order;
  for (const StepTrace& s : h.core.recorder().Steps()) {
    for (const StepTraceItem& item : s.items) {
      if (std::find(order.begin(), order.end(), item.task) == order.end()) order.push_back(item.task);
    }
  }
  return order;
}

int64_t TotalParks(const SchedulerStats& s) { return std::accumulate(s.parks_by_kind.begin(), s.parks_by_kind.end(), int64_t{0}); }

TEST(QueuePolicy, Names) {
  EXPECT_STREQ(QueuePolicyName(QueuePolicy::kValet), "valet");
  EXPECT_STREQ(QueuePolicyName(QueuePolicy::kFifo), "fifo");
  EXPECT_STREQ(QueuePolicyName(QueuePolicy::kPriorityNoPreempt), "priority");
  EXPECT_STREQ(QueuePolicyName(QueuePolicy::kBatchAll), "batch");
}

TEST(QueuePolicy, FifoIgnoresTiersAndRunsEachTaskToCompletion) {
  Harness h({}, WithPolicy(QueuePolicy::kFifo));
  const TaskId doc = h.Submit(Tier::kOfflineIndexing, Text(300, 1), 40);
  ASSERT_TRUE(h.core.RunOneStep());
  const TaskId sum = h.Submit(Tier::kBackgroundSummary, Text(50, 2), 10);
  const TaskId chat = h.Submit(Tier::kForegroundChat, "hello there", 10);
  h.core.RunUntilIdle();
  EXPECT_EQ(StartOrder(h), (std::vector<TaskId>{doc, sum, chat}));
  // Each task's steps are contiguous: it ran to completion once started.
  std::vector<TaskId> leads = h.Leads();
  leads.erase(std::unique(leads.begin(), leads.end()), leads.end());
  EXPECT_EQ(leads, (std::vector<TaskId>{doc, sum, chat}));
  const SchedulerStats stats = h.core.recorder().Stats();
  EXPECT_EQ(TotalParks(stats), 0);
  EXPECT_EQ(stats.preemptions, 0);
  EXPECT_EQ(stats.done, 3);
  EXPECT_EQ(h.out[chat].tokens, ExpectedAlone(h.engine, "hello there", 7, 10));
}

TEST(QueuePolicy, PriorityWithoutPreemptionFinishesTheStartedTaskThenTakesTheHighestTier) {
  Harness h({}, WithPolicy(QueuePolicy::kPriorityNoPreempt));
  const TaskId doc = h.Submit(Tier::kOfflineIndexing, Text(300, 1), 40);
  ASSERT_TRUE(h.core.RunOneStep());
  const TaskId sum = h.Submit(Tier::kBackgroundSummary, Text(50, 2), 10);
  const TaskId chat = h.Submit(Tier::kForegroundChat, "hello there", 10);
  h.core.RunUntilIdle();
  std::vector<TaskId> leads = h.Leads();
  leads.erase(std::unique(leads.begin(), leads.end()), leads.end());
  EXPECT_EQ(leads, (std::vector<TaskId>{doc, chat, sum}));
  const SchedulerStats stats = h.core.recorder().Stats();
  EXPECT_EQ(TotalParks(stats), 0);
  EXPECT_EQ(stats.done, 3);
  EXPECT_EQ(h.out[doc].tokens, ExpectedAlone(h.engine, Text(300, 1), 7, 40));
}

TEST(QueuePolicy, ValetPreemptsWhereThePriorityBaselineDoesNot) {
  Harness h;  // kValet, the default
  const TaskId doc = h.Submit(Tier::kOfflineIndexing, Text(300, 1), 40);
  ASSERT_TRUE(h.core.RunOneStep());
  const TaskId chat = h.Submit(Tier::kForegroundChat, "hello there", 10);
  ASSERT_TRUE(h.core.RunOneStep());
  EXPECT_EQ(h.Leads().back(), chat);
  h.core.RunUntilIdle();
  EXPECT_GE(h.core.recorder().Stats().preemptions, 1);
  EXPECT_EQ(h.out[doc].tokens, ExpectedAlone(h.engine, Text(300, 1), 7, 40));
}

TEST(QueuePolicy, BatchAllAdvancesEveryTaskInEveryStepDecodeFirst) {
  SchedulerOptions o = WithPolicy(QueuePolicy::kBatchAll);
  for (int t = 0; t < kNumTiers; ++t) o.budgets.at(LifecycleState::kResumed, static_cast<Tier>(t)).prefill_chunk = 16;
  Harness h({}, o);
  const std::string doc_text = Text(200, 1), chat_text = "short", sum_text = Text(40, 2);
  const TaskId doc = h.Submit(Tier::kOfflineIndexing, doc_text, 12);
  const TaskId chat = h.Submit(Tier::kForegroundChat, chat_text, 30);
  const TaskId sum = h.Submit(Tier::kBackgroundSummary, sum_text, 20);
  h.core.RunUntilIdle();
  const std::vector<StepTrace> steps = h.core.recorder().Steps();
  ASSERT_FALSE(steps.empty());
  // Every step holds every task not finished before it, decode items before prompt chunks.
  for (const StepTrace& s : steps) {
    std::set<TaskId> in_step;
    bool seen_chunk = false;
    for (const StepTraceItem& item : s.items) {
      in_step.insert(item.task);
      if (item.kind != StepItemKind::kDecode) seen_chunk = true;
      EXPECT_FALSE(seen_chunk && item.kind == StepItemKind::kDecode) << "decode after a prompt chunk";
      EXPECT_LE(item.tokens, 16);
    }
    for (TaskId id : {doc, chat, sum}) {
      ASSERT_TRUE(h.out[id].result.has_value());
      const bool unfinished = h.out[id].result->metrics.end_time > s.start + 1e-12;
      EXPECT_EQ(in_step.count(id), unfinished ? 1u : 0u) << "task " << id << " at t=" << s.start;
    }
  }
  EXPECT_EQ(h.out[doc].tokens, ExpectedAlone(h.engine, doc_text, 7, 12));
  EXPECT_EQ(h.out[chat].tokens, ExpectedAlone(h.engine, chat_text, 7, 30));
  EXPECT_EQ(h.out[sum].tokens, ExpectedAlone(h.engine, sum_text, 7, 20));
  const SchedulerStats stats = h.core.recorder().Stats();
  EXPECT_EQ(stats.done, 3);
  EXPECT_GT(stats.batched_steps, 0);
  EXPECT_EQ(h.engine.open_sequences(), 0u);
}

TEST(QueuePolicy, BatchAllWaitsForRoomInASmallPoolAndLosesNothing) {
  FakeEngineOptions e;
  e.kv_bytes_per_token = 100;
  e.pool_capacity_bytes = 100 * 260;  // room for about one long task at a time
  SchedulerOptions o = WithPolicy(QueuePolicy::kBatchAll);
  Harness h(e, o);
  std::vector<std::pair<TaskId, std::string>> tasks;
  for (int i = 0; i < 4; ++i) {
    const std::string text = Text(150 + 10 * i, static_cast<char>(i));
    tasks.emplace_back(h.Submit(static_cast<Tier>(i), text, 20), text);
  }
  h.core.RunUntilIdle();
  for (const auto& [id, text] : tasks) {
    ASSERT_TRUE(h.out[id].result.has_value()) << id;
    EXPECT_EQ(h.out[id].result->state, TaskState::kDone) << id;
    EXPECT_EQ(h.out[id].tokens, ExpectedAlone(h.engine, text, 7, 20)) << id;
  }
  EXPECT_EQ(h.engine.open_sequences(), 0u);
}

TEST(QueuePolicy, PerTierAccountingAddsUp) {
  for (QueuePolicy policy :
       {QueuePolicy::kValet, QueuePolicy::kFifo, QueuePolicy::kPriorityNoPreempt, QueuePolicy::kBatchAll}) {
    Harness h({}, WithPolicy(policy));
    const TaskId doc = h.Submit(Tier::kOfflineIndexing, Text(300, 1), 20);
    ASSERT_TRUE(h.core.RunOneStep());
    h.Submit(Tier::kForegroundChat, "hello", 10);
    h.Submit(Tier::kInlineSuggestion, "sugg", 5);
    h.core.RunUntilIdle();
    const SchedulerStats s = h.core.recorder().Stats();
    const int64_t prefill = std::accumulate(s.prefill_by_tier.begin(), s.prefill_by_tier.end(), int64_t{0});
    const double busy = std::accumulate(s.busy_seconds_by_tier.begin(), s.busy_seconds_by_tier.end(), 0.0);
    EXPECT_EQ(prefill, s.prefill_tokens) << QueuePolicyName(policy);
    EXPECT_NEAR(busy, s.busy_seconds, 1e-9) << QueuePolicyName(policy);
    // The doc's prompt, counted once whatever happened to it.
    EXPECT_EQ(s.prefill_by_tier[static_cast<size_t>(Tier::kOfflineIndexing)],
              static_cast<int64_t>(h.engine.Tokenize(Text(300, 1), true).size()))
        << QueuePolicyName(policy);
    EXPECT_EQ(h.out[doc].result->state, TaskState::kDone);
  }
}

}  // namespace
}  // namespace valet
