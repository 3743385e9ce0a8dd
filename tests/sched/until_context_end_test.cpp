// max_tokens = 0: generate until the context is full (or, when the KV pool
// cannot hold one whole context, until the task alone fills the pool), and
// stop with kMaxTokens, as OpenAI's API does without max_tokens.
#include <gtest/gtest.h>

#include "sched_test_util.h"

namespace valet {
using namespace valet::testing;
namespace {

using testing::ExpectedAlone;
using testing::Harness;

FakeEngineOptions SmallContext() {
  FakeEngineOptions eo;
  eo.context_length = 64;
  return eo;
}

TEST(UntilContextEnd, GeneratesUpToTheLastPosition) {
  Harness h(SmallContext());
  const std::string prompt(50, 'p');  // 51 tokens with BOS: 13 positions left
  const TaskId id = h.Submit(Tier::kForegroundChat, prompt, 0);
  ASSERT_GT(id, 0);
  h.core.RunUntilIdle();
  const TaskResult& r = *h.out[id].result;
  EXPECT_EQ(r.state, TaskState::kDone) << r.status.message();
  EXPECT_EQ(r.stop_reason, StopReason::kMaxTokens);
  EXPECT_EQ(r.tokens, ExpectedAlone(h.engine, prompt, 7, 13));
  EXPECT_EQ(r.metrics.prompt_tokens + r.metrics.generated_tokens, 64);
}

TEST(UntilContextEnd, EndOfGenerationStillStopsFirst) {
  FakeEngineOptions eo = SmallContext();
  eo.eos_one_in = 3;
  Harness h(eo);
  const TaskId id = h.Submit(Tier::kForegroundChat, "p", 0, 11);
  h.core.RunUntilIdle();
  const TaskResult& r = *h.out[id].result;
  EXPECT_EQ(r.tokens, ExpectedAlone(h.engine, "p", 11, 62));
  EXPECT_EQ(r.stop_reason, r.tokens.back() == FakeEngine::kEos ? StopReason::kEos : StopReason::kMaxTokens);
}

TEST(UntilContextEnd, APromptThatFillsTheContextIsRefused) {
  Harness h(SmallContext());
  Result<TaskId> full = h.core.Submit(h.Request(Tier::kForegroundChat, std::string(63, 'p'), 0));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(full.status().message().find("64 tokens"), std::string::npos) << full.status().message();
  // One position left: one token.
  const TaskId one = h.Submit(Tier::kForegroundChat, std::string(62, 'p'), 0);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[one].result->tokens.size(), 1u);
}

// A pool smaller than one context: the task runs until it fills the pool
// alone, rather than being refused for a context it could never use.
TEST(UntilContextEnd, ThePoolCapsATaskWithoutLimit) {
  FakeEngineOptions eo;
  eo.kv_bytes_per_token = 1000;
  eo.pool_capacity_bytes = 40'000;  // a task alone: its tokens + one block
  Harness h(eo);
  const std::string prompt(20, 'p');  // 21 tokens: 18 more fit
  const TaskId id = h.Submit(Tier::kForegroundChat, prompt, 0);
  ASSERT_GT(id, 0);
  h.core.RunUntilIdle();
  const TaskResult& r = *h.out[id].result;
  EXPECT_EQ(r.state, TaskState::kDone) << r.status.message();
  EXPECT_EQ(r.stop_reason, StopReason::kMaxTokens);
  EXPECT_EQ(r.tokens, ExpectedAlone(h.engine, prompt, 7, 18));
  // An explicit limit over the pool is still refused, and so is a prompt
  // that leaves no room for one token.
  EXPECT_EQ(h.core.Submit(h.Request(Tier::kForegroundChat, prompt, 19)).status().code(),
            StatusCode::kResourceExhausted);
  Result<TaskId> no_room = h.core.Submit(h.Request(Tier::kForegroundChat, std::string(38, 'p'), 0));
  EXPECT_EQ(no_room.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(no_room.status().message().find("40 tokens"), std::string::npos) << no_room.status().message();
}

}  // namespace
}  // namespace valet
