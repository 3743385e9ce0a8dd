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

// Tools reach the template as `tools` in OpenAI's function form, a call's
// arguments as an object (templates read its keys or dump it), and a tool
// message keeps the id of the call it answers.
TEST(ChatRenderer, ToolsAndToolCallsReachTheTemplate) {
  ChatFormat f;
  f.template_source =
      "{% for t in tools %}{{ t.type }}:{{ t.function.name }}:{{ t.function.description }}:"
      "{{ t.function.parameters | tojson }};{% endfor %}"
      "{% for m in messages %}[{{ m.role }}]{{ m.content }}"
      "{% for c in m.tool_calls %}({{ c.id }} {{ c.type }} {{ c.function.name }} city={{ c.function.arguments.city }})"
      "{% endfor %}{% if m.tool_call_id %}<{{ m.tool_call_id }}>{% endif %}{% endfor %}";
  const ChatRenderer chat = ChatRenderer::ForFormat(f);
  const std::vector<ToolDefinition> tools = {
      {"get_weather", "Weather now.", R"({"type":"object","properties":{"city":{"type":"string"}}})"},
      {"no_args", "", ""}};
  const std::vector<ChatMessage> messages = {
      {"user", "Oslo?"},
      {"assistant", "", {{"c1", "get_weather", R"({"city": "Oslo"})"}}},
      {"tool", "-3", {}, "c1"}};
  Result<RenderedPrompt> r = chat.RenderChat("", messages, tools);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->own,
            "function:get_weather:Weather now.:"
            R"({"type": "object", "properties": {"city": {"type": "string"}}};)"
            R"(function:no_args::{"type": "object"};)"
            "[user]Oslo?[assistant](c1 function get_weather city=Oslo)[tool]-3<c1>");
}

// A template that does not show tools (the built-in ChatML, Gemma 3, Phi-3.5)
// gets them from valet in a system message, with the generic call form
// chat/tool_calls.h reads back; after the task's own system prompt if any.
TEST(ChatRenderer, ATemplateWithoutToolsGetsThemInASystemMessage) {
  const ChatRenderer chat = ChatRenderer::ForFormat({});
  const std::vector<ToolDefinition> tools = {{"ping", "Is it up?", ""}};
  Result<RenderedPrompt> alone = chat.RenderChat("", {{"user", "Up?"}}, tools);
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_EQ(alone->own.rfind("<|im_start|>system\nYou may call one of these tools", 0), 0u) << alone->own;
  EXPECT_NE(alone->own.find(R"({"name":"ping","description":"Is it up?","parameters":{"type":"object"}})"),
            std::string::npos)
      << alone->own;
  Result<RenderedPrompt> with_system = chat.RenderChat("Be brief.", {{"user", "Up?"}}, tools);
  ASSERT_TRUE(with_system.ok());
  EXPECT_EQ(with_system->shared.rfind("<|im_start|>system\nBe brief.\n\nYou may call one of these tools", 0), 0u)
      << with_system->shared;
}

TEST(ChatRenderer, MalformedToolsAndCallsAreRefused) {
  const ChatRenderer chat = ChatRenderer::ForFormat({});
  const std::vector<ChatMessage> user = {{"user", "x"}};
  const auto refused = [&](const std::vector<ChatMessage>& messages, const std::vector<ToolDefinition>& tools,
                           std::string_view why) {
    Result<RenderedPrompt> r = chat.RenderChat("", messages, tools);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << why;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  };
  refused(user, {{"get weather"}}, "tool name 'get weather'");
  refused(user, {{std::string(65, 'a')}}, "is not 1-64");
  refused(user, {{"f", "", "[1]"}}, "the parameters of tool f is not a JSON object");
  refused(user, {{"f", "", "{"}}, "the parameters of tool f is not JSON");
  refused(user, {{"f", "", "{\"a\":\"" + std::string(kMaxToolSchemaBytes, 'x') + "\"}"}}, "bytes");
  refused(user, std::vector<ToolDefinition>(kMaxTools + 1, ToolDefinition{"f"}), "tools (at most");
  refused({{"user", "x", {{"c", "f", "{}"}}}}, {}, "a 'user' message with tool calls");
  refused({{"user", "x", {}, "c"}}, {}, "a 'user' message with a tool_call_id");
  refused({{"assistant", "", {{"c", "f", "[]"}}}}, {}, "the arguments of a call to f is not a JSON object");
  refused({{"assistant", "", {{"c", "", "{}"}}}}, {}, "tool call name ''");
  refused({{"robot", "x"}}, {}, "unknown chat role 'robot'");
  EXPECT_TRUE(chat.RenderChat("", {{"assistant", "", {{"c", "f", "{}"}}}}).ok()) << "a call is content enough";
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
