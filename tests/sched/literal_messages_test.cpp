// The scheduler tokenizes chat messages as text: on a fake engine whose
// vocabulary has ChatML's control tokens, control texts typed into the system
// prompt and the messages cost as many tokens as look-alike text of the same
// length, unless SchedulerOptions::parse_special_in_messages asks for them to
// be parsed; raw prompts are always parsed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched_test_util.h"

namespace valet::testing {
namespace {

FakeEngineOptions ChatMlVocabulary() {
  FakeEngineOptions o;
  o.special_tokens = {"<|im_start|>", "<|im_end|>"};
  return o;
}

struct Conversation {
  std::string system;
  std::vector<ChatMessage> messages;
};

// Control texts typed at both ends of every content, and the same with one letter changed.
const Conversation kTyped = {"Be <|im_end|> brief.<|im_start|>",
                             {{"user", "<|im_end|>hi"}, {"assistant", "ok <|im_start|>"}, {"user", "x<|im_end|>"}}};
const Conversation kLookalike = {"Be <|im_enD|> brief.<|im_starT|>",
                                 {{"user", "<|im_enD|>hi"}, {"assistant", "ok <|im_starT|>"}, {"user", "x<|im_enD|>"}}};
// Typed control texts: 12 and 10 bytes, parsed into one token each.
constexpr int32_t kSavedWhenParsed = (10 - 1) + (12 - 1) + (10 - 1) + (12 - 1) + (10 - 1);

int32_t PromptTokens(Harness& h, const Conversation& c) {
  TaskRequest r = h.Request(Tier::kForegroundChat, "", 1);
  r.system_prompt = c.system;
  r.messages = c.messages;
  Result<TaskId> id = h.core.Submit(r);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  if (!id.ok()) return -1;
  h.core.RunUntilIdle();
  const Collected& out = h.out[*id];
  EXPECT_TRUE(out.result.has_value() && out.result->state == TaskState::kDone);
  return out.result ? out.result->metrics.prompt_tokens : -1;
}

TEST(LiteralMessagesTest, TypedControlTextsInMessagesAreText) {
  Harness h(ChatMlVocabulary());
  const int32_t typed = PromptTokens(h, kTyped);
  EXPECT_EQ(typed, PromptTokens(h, kLookalike));
  // The template's own markup is still made of control tokens: one
  // <|im_start|> and one <|im_end|> per turn (system + 3) and the generation prompt.
  Harness plain_bytes;  // a vocabulary without them: every markup text is bytes
  EXPECT_EQ(PromptTokens(plain_bytes, kTyped), typed + 4 * (12 - 1 + 10 - 1) + (12 - 1));
}

TEST(LiteralMessagesTest, TheOptionParsesThemAsBefore) {
  SchedulerOptions options;
  options.parse_special_in_messages = true;
  Harness parsing(ChatMlVocabulary(), options);
  Harness literal(ChatMlVocabulary());
  EXPECT_EQ(PromptTokens(parsing, kTyped), PromptTokens(literal, kTyped) - kSavedWhenParsed);
  EXPECT_EQ(PromptTokens(parsing, kLookalike), PromptTokens(literal, kLookalike));
}

TEST(LiteralMessagesTest, RawPromptsAreTheCallersOwnAndParsed) {
  Harness h(ChatMlVocabulary());
  TaskRequest r = h.Request(Tier::kInlineSuggestion, "<|im_start|>user\n", 1);
  r.system_prompt = "<|im_end|>";
  Result<TaskId> id = h.core.Submit(r);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  h.core.RunUntilIdle();
  ASSERT_TRUE(h.out[*id].result.has_value());
  // BOS, <|im_end|>, "\n\n" | <|im_start|>, "user\n".
  EXPECT_EQ(h.out[*id].result->metrics.prompt_tokens, 1 + 1 + 2 + 1 + 5);
}

}  // namespace
}  // namespace valet::testing
