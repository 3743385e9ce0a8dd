// Tool calls as grammars: a call names one of the tools and its arguments
// follow that tool's parameters (their $refs resolving within them), wrapped
// as the family writes calls, one to max_calls of them.
#include "constrain/tool_call_gbnf.h"

#include <gtest/gtest.h>

#include <string>

#include "constraint_test_util.h"

namespace valet {
namespace {

using test::CompileConstraint;
using test::ConstraintError;
using test::Matches;

ToolCallSpec Spec() {
  ToolCallSpec spec;
  spec.syntax.call_prefix = "<tool_call>\n";
  spec.syntax.call_suffix = "\n</tool_call>";
  spec.syntax.separator = "\n";
  Result<Json> weather = ParseJson(R"({"type":"object","properties":{"city":{"type":"string","maxLength":8},
      "unit":{"enum":["c","f"]}},"required":["city"],"additionalProperties":false})");
  // Its own $defs, as every tool's schema is a document of its own.
  Result<Json> tree = ParseJson(R"({"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array",
      "items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["kids"]}},"type":"object",
      "properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"]})");
  EXPECT_TRUE(weather.ok() && tree.ok());
  spec.tools = {{"get_weather", *weather}, {"tree", *tree}, {"ping", Json{{"type", "object"}}}};
  return spec;
}

TEST(ToolCallGbnf, OneCallOfAnyToolUnderItsParameters) {
  auto c = CompileConstraint({ConstraintKind::kToolCall, ToolCallSpecText(Spec())});
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(Matches(c, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}\n</tool_call>"));
  EXPECT_TRUE(
      Matches(c, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\",\"unit\":\"c\"}}\n</tool_call>"));
  EXPECT_TRUE(Matches(c, "<tool_call>\n{\"name\": \"tree\", \"arguments\": {\"root\":{\"kids\":[{\"kids\":[]}]}}}\n</tool_call>"));
  EXPECT_TRUE(Matches(c, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  // Another tool's name, arguments outside the schema, an unknown property,
  // a missing required one, no wrapper, two calls when one is allowed.
  EXPECT_FALSE(Matches(c, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(Matches(c, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Reykjavik\"}}\n</tool_call>"));
  EXPECT_FALSE(Matches(c, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"a\",\"x\":1}}\n</tool_call>"));
  EXPECT_FALSE(Matches(c, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(Matches(c, "<tool_call>\n{\"name\": \"tree\", \"arguments\": {\"root\":{\"kids\":[{},{},{}]}}}\n</tool_call>"));
  EXPECT_FALSE(Matches(c, "{\"name\": \"ping\", \"arguments\": {}}"));
  EXPECT_FALSE(Matches(c, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>\n"
                          "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
}

TEST(ToolCallGbnf, SeveralCallsJoinedAndTheKeysTheFamilyUses) {
  ToolCallSpec spec = Spec();
  spec.syntax = ToolCallSyntax{"[TOOL_CALLS][", "", "", ", ", "]", "name", "parameters"};
  spec.max_calls = 2;
  auto c = CompileConstraint({ConstraintKind::kToolCall, ToolCallSpecText(spec)});
  ASSERT_NE(c, nullptr);
  const std::string ping = "{\"name\": \"ping\", \"parameters\": {}}";
  EXPECT_TRUE(Matches(c, "[TOOL_CALLS][" + ping + "]"));
  EXPECT_TRUE(Matches(c, "[TOOL_CALLS][" + ping + ", " + ping + "]"));
  EXPECT_FALSE(Matches(c, "[TOOL_CALLS][" + ping + ", " + ping + ", " + ping + "]"));
  EXPECT_FALSE(Matches(c, "[TOOL_CALLS][{\"name\": \"ping\", \"arguments\": {}}]"));
}

TEST(ToolCallGbnf, TheSpecRoundTripsAndBadSpecsAreNamed) {
  const ToolCallSpec spec = Spec();
  Result<ToolCallSpec> back = ParseToolCallSpec(ToolCallSpecText(spec));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->syntax, spec.syntax);
  EXPECT_EQ(back->max_calls, spec.max_calls);
  ASSERT_EQ(back->tools.size(), spec.tools.size());
  for (size_t i = 0; i < spec.tools.size(); ++i) {
    EXPECT_EQ(back->tools[i].name, spec.tools[i].name);
    EXPECT_EQ(back->tools[i].parameters, spec.tools[i].parameters);
  }
  const auto error = [](const std::string& text) { return ConstraintError({ConstraintKind::kToolCall, text}); };
  EXPECT_NE(error("[]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error(R"({"tools":[]})").find("'tools' is not a non-empty array"), std::string::npos);
  EXPECT_NE(error(R"({"tools":[{"name":""}]})").find("tools[0].name"), std::string::npos);
  EXPECT_NE(error(R"({"tools":[{"name":"f","parameters":[]}]})").find("tools[0].parameters"), std::string::npos);
  EXPECT_NE(error(R"({"max_calls":17,"tools":[{"name":"f"}]})").find("max_calls"), std::string::npos);
  EXPECT_NE(error(R"({"prefix":1,"tools":[{"name":"f"}]})").find("'prefix' is not a string"), std::string::npos);
  const std::string unsupported =
      error(R"({"tools":[{"name":"f","parameters":{"type":"object","patternProperties":{}}}]})");
  EXPECT_NE(unsupported.find("tool f: json schema: keyword 'patternProperties'"), std::string::npos) << unsupported;
  EXPECT_NE(error(std::string(300 * 1024, ' ')).find("larger than"), std::string::npos);
}

}  // namespace
}  // namespace valet
