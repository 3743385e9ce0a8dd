// A chat answer that may call tools: the constraint a required or named call
// gets, the answer read back (calls of offered tools only), and the text a
// stream holds back while it may still become a call.
#include "server/tool_reply.h"

#include <gtest/gtest.h>

#include <string>

#include "chat/tool_calls.h"

namespace valet {
namespace {

CompletionRequest WithTools(ToolChoice::Kind kind, std::string name = "") {
  CompletionRequest r;
  r.task.messages = {{"user", "x"}};
  r.task.tools = {{"get_weather", "", R"({"type":"object","properties":{"city":{"type":"string"}}})"}, {"ping"}};
  r.tool_choice.kind = kind;
  r.tool_choice.name = std::move(name);
  return r;
}

const ToolCallSyntax kHermes =
    ToolCallSyntaxForTemplate("{% if tools %}<tools>{{ tools | tojson }}</tools> <tool_call>{% endif %}");

TEST(ToolReply, ARequiredOrNamedCallIsConstrainedAnAutoOneIsNot) {
  std::optional<ToolCallSyntax> syntax;
  CompletionRequest automatic = WithTools(ToolChoice::Kind::kAuto);
  ASSERT_FALSE(PrepareToolCalls(kHermes, &automatic, &syntax).has_value());
  ASSERT_TRUE(syntax.has_value());
  EXPECT_EQ(syntax->call_prefix, "<tool_call>\n");
  EXPECT_FALSE(automatic.task.constraint.active());

  CompletionRequest named = WithTools(ToolChoice::Kind::kNamed, "ping");
  named.tool_choice.parallel = true;
  ASSERT_FALSE(PrepareToolCalls(kHermes, &named, &syntax).has_value());
  EXPECT_EQ(named.task.constraint.kind, ConstraintKind::kToolCall);
  EXPECT_EQ(named.task.constraint.text.find("get_weather"), std::string::npos) << "only the named tool";
  EXPECT_NE(named.task.constraint.text.find(R"("max_calls":8)"), std::string::npos);

  CompletionRequest single = WithTools(ToolChoice::Kind::kRequired);
  ASSERT_FALSE(PrepareToolCalls(kHermes, &single, &syntax).has_value());
  EXPECT_NE(single.task.constraint.text.find(R"("max_calls":1)"), std::string::npos);
  EXPECT_NE(single.task.constraint.text.find("get_weather"), std::string::npos);

  CompletionRequest both = WithTools(ToolChoice::Kind::kRequired);
  both.task.constraint = {ConstraintKind::kJsonObject, ""};
  std::optional<ApiError> e = PrepareToolCalls(kHermes, &both, &syntax);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "tool_choice");

  CompletionRequest none = WithTools(ToolChoice::Kind::kNone);
  ASSERT_FALSE(PrepareToolCalls(kHermes, &none, &syntax).has_value());
  EXPECT_FALSE(syntax.has_value());
}

TEST(ToolReply, OnlyCallsOfOfferedToolsAreCalls) {
  const ToolCallSyntax s = ToolCallSyntaxForTemplate("<tool_call>");
  const std::vector<ToolDefinition> tools = {{"ping"}};
  ToolAnswer a = ReadToolAnswer("On it.\n<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>", s, tools);
  EXPECT_EQ(a.content, "On it.");
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.calls[0].name, "ping");
  EXPECT_EQ(a.calls[0].arguments, "{}");
  EXPECT_EQ(a.calls[0].id.size(), 9u);
  const std::string other = "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>";
  a = ReadToolAnswer(other, s, tools);
  EXPECT_TRUE(a.calls.empty());
  EXPECT_EQ(a.content, other);
}

// What a stream shows of each piece, joined; the rest is held back.
std::string Shown(ToolCallStream& s, std::initializer_list<std::string_view> pieces) {
  std::string out;
  for (std::string_view p : pieces) out += s.Push(p);
  return out;
}

TEST(ToolReply, AStreamHoldsBackWhatMayBecomeACall) {
  ToolCallStream hermes(ToolCallSyntaxForTemplate("<tool_call>"));
  EXPECT_EQ(Shown(hermes, {"Let me ", "check. <to", "ol_c"}), "Let me check. ");
  EXPECT_EQ(Shown(hermes, {"all>\n{\"name\"", ": \"ping\"}"}), "") << "inside a call nothing is shown";
  EXPECT_EQ(hermes.shown(), 14u);

  ToolCallStream text(ToolCallSyntaxForTemplate("<tool_call>"));
  EXPECT_EQ(Shown(text, {"a <", "b"}), "a <b") << "a '<' that does not go on to the marker is text";

  ToolCallStream llama(ToolCallSyntaxForTemplate("tools \"parameters\""));
  EXPECT_EQ(Shown(llama, {" \n", "{\"name\": "}), "") << "a bare-object family: an answer opening with '{'";
  ToolCallStream prose(ToolCallSyntaxForTemplate("tools \"parameters\""));
  EXPECT_EQ(Shown(prose, {" ", "It is {cold}."}), " It is {cold}.");

  ToolCallStream mistral(ToolCallSyntaxForTemplate("[TOOL_CALLS]"));
  EXPECT_EQ(Shown(mistral, {"ok [TOOL", "_CALLS][{"}), "ok ");
}

}  // namespace
}  // namespace valet
