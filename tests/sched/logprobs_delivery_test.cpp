// Per-token log-probabilities through the scheduler: asked for with
// TaskRequest::top_logprobs, delivered before each token's on_token and kept
// in the result; nothing at all when not asked for.
#include <gtest/gtest.h>

#include "sampling/logprobs.h"
#include "sched_test_util.h"

namespace valet {
namespace {

using testing::Harness;

struct Seen {
  std::vector<TokenLogprobs> logprobs;
  std::vector<int32_t> tokens_before;  // on_token calls already made at each on_logprobs
};

TEST(LogprobsDelivery, EachTokenGetsItsOwnBeforeItsText) {
  Harness h;
  TaskRequest r = h.Request(Tier::kForegroundChat, "hello", 6);
  r.top_logprobs = 3;
  Seen seen;
  TaskId id = 0;
  r.callbacks.on_logprobs = [&](TaskId task, const TokenLogprobs& lp) {
    id = task;
    seen.logprobs.push_back(lp);
    seen.tokens_before.push_back(static_cast<int32_t>(h.out[task].tokens.size()));
  };
  ASSERT_TRUE(h.core.Submit(std::move(r)).ok());
  h.core.RunUntilIdle();
  const TaskResult& result = *h.out[id].result;
  ASSERT_EQ(seen.logprobs.size(), result.tokens.size());
  std::vector<int32_t> history = h.engine.Tokenize("hello", true);
  for (size_t i = 0; i < seen.logprobs.size(); ++i) {
    const TokenLogprobs& lp = seen.logprobs[i];
    EXPECT_EQ(seen.tokens_before[i], static_cast<int32_t>(i)) << "before its on_token";
    EXPECT_EQ(lp.sampled.token, result.tokens[i]);
    EXPECT_EQ(lp.sampled.piece, h.engine.TokenPiece(lp.sampled.token));
    const TokenLogprobs expected =
        ComputeLogprobs(h.engine.LogitsAfter(history, 7, result.tokens[i]), result.tokens[i], 3);
    EXPECT_EQ(lp.sampled.logprob, expected.sampled.logprob);
    ASSERT_EQ(lp.top.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(lp.top[k].token, expected.top[k].token);
      EXPECT_EQ(lp.top[k].piece, h.engine.TokenPiece(lp.top[k].token));
    }
    history.push_back(result.tokens[i]);
  }
  ASSERT_EQ(result.logprobs.size(), result.tokens.size());
  EXPECT_EQ(result.logprobs.back().top[1].token, seen.logprobs.back().top[1].token);
}

TEST(LogprobsDelivery, NotAskedForNotComputed) {
  Harness h;
  TaskRequest r = h.Request(Tier::kForegroundChat, "hello", 4);
  int calls = 0;
  r.callbacks.on_logprobs = [&](TaskId, const TokenLogprobs&) { ++calls; };
  Result<TaskId> id = h.core.Submit(std::move(r));
  ASSERT_TRUE(id.ok());
  h.core.RunUntilIdle();
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(h.out[*id].result->logprobs.empty());
  EXPECT_EQ(h.out[*id].result->tokens.size(), 4u);
}

TEST(LogprobsDelivery, TopLogprobsOutOfRangeIsRefused) {
  Harness h;
  for (int32_t bad : {-2, kMaxTopLogprobs + 1}) {
    TaskRequest r = h.Request(Tier::kForegroundChat, "x", 4);
    r.top_logprobs = bad;
    EXPECT_EQ(h.core.Submit(std::move(r)).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

// Parking and resuming a task changes nothing in what it reports.
TEST(LogprobsDelivery, SurviveParking) {
  Harness h;
  TaskRequest bg = h.Request(Tier::kOfflineIndexing, "background", 8);
  bg.top_logprobs = 2;
  const TaskId bg_id = *h.core.Submit(std::move(bg));
  h.core.RunOneStep();
  h.core.RunOneStep();
  const TaskId chat = h.Submit(Tier::kForegroundChat, "chat", 3);
  h.core.RunUntilIdle();
  ASSERT_EQ(h.out[chat].result->state, TaskState::kDone);
  const TaskResult& r = *h.out[bg_id].result;
  EXPECT_GT(r.metrics.parks, 0);
  Harness alone;
  TaskRequest again = alone.Request(Tier::kOfflineIndexing, "background", 8);
  again.top_logprobs = 2;
  const TaskId again_id = *alone.core.Submit(std::move(again));
  alone.core.RunUntilIdle();
  const TaskResult& ref = *alone.out[again_id].result;
  ASSERT_EQ(r.logprobs.size(), ref.logprobs.size());
  for (size_t i = 0; i < r.logprobs.size(); ++i) {
    EXPECT_EQ(r.logprobs[i].sampled.logprob, ref.logprobs[i].sampled.logprob);
    EXPECT_EQ(r.logprobs[i].top[1].token, ref.logprobs[i].top[1].token);
  }
}

}  // namespace
}  // namespace valet
