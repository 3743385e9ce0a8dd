// BatchPolicy, PreemptionController and the chat template.
#include <gtest/gtest.h>

#include "sched/batch_policy.h"
#include "sched/chat_renderer.h"
#include "sched/preemption_controller.h"
#include "testing/sched/fake_engine.h"

namespace valet {
using namespace valet::testing;
namespace {

TEST(BatchPolicy, StrictNeverAddsRiders) {
  BatchPolicy p(BatchMode::kStrict, 1.0);
  p.ObserveDecodeStep(1, 0.01);
  EXPECT_EQ(p.Plan({true, 5, 100}), 0);
}

TEST(BatchPolicy, FillMeasuresThenStaysWithinTheCostFraction) {
  BatchPolicy p(BatchMode::kFill, 0.25);
  EXPECT_EQ(p.Plan({true, 5, 100}), 0);  // nothing measured yet
  p.ObserveDecodeStep(1, 0.010);
  EXPECT_EQ(p.Plan({false, 5, 100}), 0);  // not a decode step of the lead
  EXPECT_EQ(p.Plan({true, 5, 100}), 1);   // one probe
  p.ObserveDecodeStep(2, 0.011);          // marginal 1 ms = 10% of a solo step
  EXPECT_NEAR(p.marginal_seconds(), 0.001, 1e-12);
  EXPECT_EQ(p.Plan({true, 5, 100}), 2);  // 2 x 10% <= 25%
  EXPECT_EQ(p.Plan({true, 1, 100}), 1);
  EXPECT_EQ(p.Plan({true, 5, 1}), 1);
  p.ObserveDecodeStep(2, 0.019);  // marginal now (1 + 9) / 2 = 5 ms
  EXPECT_EQ(p.Plan({true, 5, 100}), 0);
}

TEST(PreemptionController, ResidentWithoutPressureEngineAdviceWithIt) {
  FakeEngineOptions o;
  o.kv_bytes_per_token = 1000;
  FakeEngine engine(o);
  Result<SequenceId> seq = engine.OpenSequence({});
  ASSERT_TRUE(seq.ok());
  std::vector<int32_t> tokens(100, 5);
  StepItem item{*seq, tokens, 0, false};
  ASSERT_TRUE(engine.Step({&item, 1}).ok());
  PreemptionController automatic(ParkPolicy::kAuto);
  EXPECT_EQ(automatic.Decide(engine, {*seq, ParkReason::kPreempted, 0}), ParkKind::kResident);
  EXPECT_EQ(automatic.Decide(engine, {*seq, ParkReason::kPreempted, 4096}), engine.AdvisePark(*seq, 4096));
  EXPECT_NE(automatic.Decide(engine, {*seq, ParkReason::kPressure, 0}), ParkKind::kResident);
  EXPECT_EQ(automatic.Decide(engine, {*seq, ParkReason::kDestroy, 0}), ParkKind::kSnapshotDisk);
  PreemptionController forced(ParkPolicy::kForcePartial);
  EXPECT_EQ(forced.Decide(engine, {*seq, ParkReason::kPreempted, 0}), ParkKind::kPartial);
  PreemptionController resident(ParkPolicy::kForceResident);
  EXPECT_NE(resident.Decide(engine, {*seq, ParkReason::kPressure, 10}), ParkKind::kResident);
}

const std::vector<ChatMessage> kConversation = {{"user", "Hi"}, {"assistant", "Hello"}, {"user", "Sum?"}};

TEST(ChatRenderer, ModelsWithoutATemplateGetChatMlWithTheSystemPromptShared) {
  const ChatRenderer chat = ChatRenderer::ForFormat({});
  EXPECT_FALSE(chat.uses_model_template());
  EXPECT_NE(chat.fallback_reason().find("no chat template"), std::string::npos);
  Result<RenderedPrompt> r = chat.RenderChat("Be brief.", kConversation);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->shared, "<|im_start|>system\nBe brief.<|im_end|>\n");
  EXPECT_EQ(r->own,
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n"
            "<|im_start|>user\nSum?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat.stop_strings(), std::vector<std::string>{"<|im_end|>"});
}

TEST(ChatRenderer, UsesTheModelsTemplateAndItsBosText) {
  ChatFormat f;
  f.template_source =
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
      "{% if add_generation_prompt %}[assistant]{% endif %}";
  f.bos_token = "<s>";
  const ChatRenderer chat = ChatRenderer::ForFormat(f);
  EXPECT_TRUE(chat.uses_model_template());
  EXPECT_TRUE(chat.stop_strings().empty());
  Result<RenderedPrompt> r = chat.RenderChat("Be brief.", kConversation);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->shared, "<s>[system]Be brief.");
  EXPECT_EQ(r->own, "[user]Hi[assistant]Hello[user]Sum?[assistant]");
  // Without a task system prompt nothing is shared, even a system message of the conversation's own.
  Result<RenderedPrompt> own_system = chat.RenderChat("", {{"system", "S"}, {"user", "x"}});
  ASSERT_TRUE(own_system.ok());
  EXPECT_EQ(own_system->shared, "");
  EXPECT_EQ(own_system->own, "<s>[system]S[user]x[assistant]");
}

TEST(ChatRenderer, TheTemplatesOwnRefusalIsTheError) {
  ChatFormat f;
  f.template_source =
      "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
      "{% for m in messages %}{{ m.content }}{% endfor %}";
  const ChatRenderer chat = ChatRenderer::ForFormat(f);
  Result<RenderedPrompt> r = chat.RenderChat("Be brief.", kConversation);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("System role not supported"), std::string::npos) << r.status().message();
  EXPECT_TRUE(chat.RenderChat("", kConversation).ok());
}

TEST(ChatRenderer, AnUnparsableTemplateFallsBackToChatMlAndSaysWhy) {
  ChatFormat f;
  f.template_source = "{% for m in messages %}{{ m.content }}";  // no endfor
  const ChatRenderer chat = ChatRenderer::ForFormat(f);
  EXPECT_FALSE(chat.uses_model_template());
  EXPECT_NE(chat.fallback_reason().find("could not be parsed"), std::string::npos) << chat.fallback_reason();
  Result<RenderedPrompt> r = chat.RenderChat("", {{"user", "x"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->own, "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatRenderer, RejectsUnknownRolesAndEmptyChats) {
  const ChatRenderer chat = ChatRenderer::ForFormat({});
  EXPECT_EQ(chat.RenderChat("", {{"robot", "x"}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(chat.RenderChat("", {{"user", ""}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ChatRenderer::RenderRaw("S", "p").shared, "S\n\n");
  EXPECT_EQ(ChatRenderer::RenderRaw("", "p").shared, "");
}

}  // namespace
}  // namespace valet
