// TaskRequest::prompt_tokens: exact token-id prompts are fed as given, and
// mixing them with a text prompt, messages or a system prompt is refused.
#include <gtest/gtest.h>

#include "sched_test_util.h"

namespace valet::testing {
namespace {

TaskRequest TokenRequest(Harness& h, std::vector<int32_t> ids, int32_t max_tokens, uint64_t seed = 5) {
  TaskRequest r = h.Request(Tier::kInlineSuggestion, "", max_tokens, seed);
  r.prompt_tokens = std::move(ids);
  return r;
}

TEST(PromptTokensTest, IdsAreFedExactlyWithoutBos) {
  Harness h;
  // A BOS in the middle and none in front: no text tokenizes to this.
  const std::vector<int32_t> ids = {h.engine.Tokenize("ab", false)[0], FakeEngine::kBos, h.engine.Tokenize("c", false)[0]};
  Result<TaskId> id = h.core.Submit(TokenRequest(h, ids, 6));
  ASSERT_TRUE(id.ok()) << id.status().message();
  h.core.RunUntilIdle();
  const Collected& c = h.out[*id];
  ASSERT_TRUE(c.result.has_value());
  ASSERT_EQ(c.result->state, TaskState::kDone);
  EXPECT_EQ(c.tokens, ExpectedAlone(h.engine, ids, 5, 6));
  EXPECT_EQ(c.result->metrics.prompt_tokens, static_cast<int32_t>(ids.size()));
}

TEST(PromptTokensTest, MixedOrBadPromptsAreRefused) {
  Harness h;
  TaskRequest with_text = TokenRequest(h, {3, 4}, 4);
  with_text.prompt = std::string("text");  // not `= "x"`: GCC 12 warns falsely (-Wrestrict) on it
  TaskRequest with_system = TokenRequest(h, {3, 4}, 4);
  with_system.system_prompt = std::string("sys");
  TaskRequest with_messages = TokenRequest(h, {3, 4}, 4);
  with_messages.messages = {{"user", "hi"}};
  for (TaskRequest* r : {&with_text, &with_system, &with_messages}) {
    Result<TaskId> id = h.core.Submit(*r);
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument) << id.status().message();
  }
  Result<TaskId> negative = h.core.Submit(TokenRequest(h, {3, -2}, 4));
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("-2"), std::string::npos) << negative.status().message();
  const std::vector<int32_t> too_long(static_cast<size_t>(h.engine.context_length()), 3);
  Result<TaskId> overflow = h.core.Submit(TokenRequest(h, too_long, 4));
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(h.core.recorder().Stats().rejected, 5);
}

}  // namespace
}  // namespace valet::testing
