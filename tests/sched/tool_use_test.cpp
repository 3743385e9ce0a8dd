// A task that offers tools: a required or named call is generated under the
// tools' schemas, an auto one is not; the answer is read back into calls of
// offered tools only (TaskResult::tool_calls), on the scheduler as on its own.
#include "sched/tool_use.h"

#include <gtest/gtest.h>

#include <string>

#include "chat/tool_calls.h"
#include "common/json.h"
#include "sched_test_util.h"

namespace valet::testing {
namespace {

TaskRequest WithTools(ToolChoice::Kind kind, std::string name = "") {
  TaskRequest r;
  r.messages = {{"user", "x"}};
  r.tools = {{"get_weather", "", R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})"},
             {"ping"}};
  r.tool_choice.kind = kind;
  r.tool_choice.name = std::move(name);
  return r;
}

// Sampled at temperature 1 under `seed`, get_weather's city a string of at
// most 8 characters.
TaskRequest Sampled(ToolChoice::Kind kind, uint64_t seed, int32_t max_tokens) {
  TaskRequest r = WithTools(kind);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 1.0f;
  r.sampling.seed = seed;
  r.tools[0].parameters = R"({"type":"object","properties":{"city":{"type":"string","maxLength":8}},)"
                          R"("required":["city"],"additionalProperties":false})";
  return r;
}

const ToolCallSyntax kHermes =
    ToolCallSyntaxForTemplate("{% if tools %}<tools>{{ tools | tojson }}</tools> <tool_call>{% endif %}");

ToolUse Planned(const TaskRequest& r) {
  Result<std::optional<ToolUse>> use = ToolUse::Plan(kHermes, r);
  EXPECT_TRUE(use.ok()) << use.status().ToString();
  EXPECT_TRUE(use.ok() && use->has_value());
  return use.ok() && use->has_value() ? **use : ToolUse::Plan(kHermes, WithTools(ToolChoice::Kind::kAuto))->value();
}

TEST(ToolUse, CallsAreConstrainedAnAutoAnswerMayBeText) {
  const ToolUse automatic = Planned(WithTools(ToolChoice::Kind::kAuto));
  EXPECT_EQ(automatic.syntax().call_prefix, "<tool_call>\n");
  EXPECT_EQ(automatic.constraint().kind, ConstraintKind::kToolCall);
  EXPECT_NE(automatic.constraint().text.find(R"("text_allowed":true)"), std::string::npos);
  TaskRequest own = WithTools(ToolChoice::Kind::kAuto);
  own.constraint = {ConstraintKind::kJsonObject, ""};
  EXPECT_FALSE(Planned(own).constraint().active()) << "the request's own constraint decides the answer";

  TaskRequest named_request = WithTools(ToolChoice::Kind::kNamed, "ping");
  named_request.tool_choice.parallel = true;
  const ToolUse named = Planned(named_request);
  EXPECT_EQ(named.constraint().kind, ConstraintKind::kToolCall);
  EXPECT_EQ(named.constraint().text.find("get_weather"), std::string::npos) << "only the named tool";
  EXPECT_NE(named.constraint().text.find(R"("max_calls":8)"), std::string::npos);

  const ToolUse single = Planned(WithTools(ToolChoice::Kind::kRequired));
  EXPECT_NE(single.constraint().text.find(R"("max_calls":1)"), std::string::npos);
  EXPECT_EQ(single.constraint().text.find("text_allowed"), std::string::npos);
  EXPECT_NE(single.constraint().text.find("get_weather"), std::string::npos);

  Result<std::optional<ToolUse>> none = ToolUse::Plan(kHermes, WithTools(ToolChoice::Kind::kNone));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  TaskRequest no_tools = WithTools(ToolChoice::Kind::kAuto);
  no_tools.tools.clear();
  ASSERT_TRUE(ToolUse::Plan(kHermes, no_tools).ok());
  EXPECT_FALSE(ToolUse::Plan(kHermes, no_tools)->has_value());
}

TEST(ToolUse, WhatCannotBeHonouredIsRefused) {
  TaskRequest both = WithTools(ToolChoice::Kind::kRequired);
  both.constraint = {ConstraintKind::kJsonObject, ""};
  EXPECT_EQ(ToolUse::Plan(kHermes, both).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ToolUse::Plan(kHermes, WithTools(ToolChoice::Kind::kNamed, "rm")).status().code(),
            StatusCode::kInvalidArgument);
  TaskRequest nothing_to_call = WithTools(ToolChoice::Kind::kRequired);
  nothing_to_call.tools.clear();
  EXPECT_EQ(ToolUse::Plan(kHermes, nothing_to_call).status().code(), StatusCode::kInvalidArgument);
}

TEST(ToolUse, OnlyCallsOfOfferedToolsAreCalls) {
  TaskRequest r = WithTools(ToolChoice::Kind::kAuto);
  r.tools = {{"ping"}};
  const ToolUse use = Planned(r);
  ToolAnswer a = use.Read("On it.\n<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>");
  EXPECT_EQ(a.content, "On it.");
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.calls[0].name, "ping");
  EXPECT_EQ(a.calls[0].arguments, "{}");
  EXPECT_EQ(a.calls[0].id.size(), 9u);
  const std::string other = "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>";
  a = use.Read(other);
  EXPECT_TRUE(a.calls.empty());
  EXPECT_EQ(a.content, other);
}

// On the scheduler (the fake engine's ChatML describes the tools itself and
// reads the generic {"name": ..., "arguments": ...} form): whatever the seed,
// a required call ends DONE as one call of an offered tool whose arguments
// follow its schema; with tool_choice none the answer is text.
TEST(ToolUse, TheSchedulerAnswersWithParsedCalls) {
  Harness h;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    TaskRequest r = Sampled(ToolChoice::Kind::kRequired, seed, 400);
    h.Attach(r);
    Result<TaskId> id = h.core.Submit(r);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    h.core.RunUntilIdle();
    const TaskResult& result = *h.out[*id].result;
    ASSERT_EQ(result.state, TaskState::kDone) << result.status.ToString();
    ASSERT_EQ(result.tool_calls.size(), 1u) << result.text;
    const ToolCall& call = result.tool_calls[0];
    EXPECT_EQ(call.id.size(), 9u);
    Result<Json> arguments = ParseJson(call.arguments);
    ASSERT_TRUE(arguments.ok()) << call.arguments;
    if (call.name == "get_weather") {
      ASSERT_EQ(arguments->size(), 1u) << call.arguments;
      EXPECT_TRUE((*arguments)["city"].is_string()) << call.arguments;
    } else {
      EXPECT_EQ(call.name, "ping");
      EXPECT_TRUE(arguments->is_object());
    }
    EXPECT_TRUE(result.content.empty()) << result.content;
  }
  TaskRequest none = WithTools(ToolChoice::Kind::kNone);
  h.Attach(none);
  Result<TaskId> id = h.core.Submit(none);
  ASSERT_TRUE(id.ok());
  h.core.RunUntilIdle();
  EXPECT_TRUE(h.out[*id].result->tool_calls.empty());
  EXPECT_EQ(h.out[*id].result->content, h.out[*id].result->text);
}

// Under "auto" (the built-in ChatML's generic form: an answer opening with
// '{' is a call), whatever the seed: text that does not read as a call, or a
// call of an offered tool whose arguments follow its schema, read back. The
// fake model opens with '{' about once in a hundred seeds.
TEST(ToolUse, AnAutoAnswerIsTextOrAValidCall) {
  FakeEngineOptions o;
  o.eos_one_in = 40;
  Harness h(o);
  int with_calls = 0, text_only = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    TaskRequest r = Sampled(ToolChoice::Kind::kAuto, seed, 600);
    r.tools[1].parameters = R"({"type":"object","additionalProperties":false})";
    h.Attach(r);
    Result<TaskId> id = h.core.Submit(r);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    h.core.RunUntilIdle();
    const TaskResult& result = *h.out[*id].result;
    ASSERT_EQ(result.state, TaskState::kDone) << result.status.ToString();
    if (result.tool_calls.empty()) {
      ++text_only;
      const size_t first = result.text.find_first_not_of(" \t\r\n");
      EXPECT_TRUE(first == std::string::npos || result.text[first] != '{') << result.text;
      continue;
    }
    ++with_calls;
    EXPECT_NE(result.stop_reason, StopReason::kMaxTokens) << result.text;
    for (const ToolCall& call : result.tool_calls) {
      Result<Json> arguments = ParseJson(call.arguments);
      ASSERT_TRUE(arguments.ok()) << call.arguments;
      if (call.name == "ping") {
        EXPECT_TRUE(arguments->empty()) << call.arguments;
      } else {
        ASSERT_EQ(call.name, "get_weather");
        ASSERT_TRUE((*arguments)["city"].is_string()) << call.arguments;
        EXPECT_LE((*arguments)["city"].get<std::string>().size(), 8u) << call.arguments;
      }
    }
    EXPECT_EQ(result.content, "");
  }
  EXPECT_GT(with_calls, 0);
  EXPECT_GT(text_only, 0);
}

}  // namespace
}  // namespace valet::testing
