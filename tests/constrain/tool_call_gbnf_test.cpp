// Tool calls as grammars: a call names one of the tools and its arguments
// follow that tool's parameters (their $refs resolving within them), wrapped
// as the family writes calls, one to max_calls of them.
#include "constrain/tool_call_gbnf.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "constraint_test_util.h"
#include "constrain/grammar_cache.h"
#include "constrain/grammar_trigger.h"
#include "constrain/sequence_constraint.h"

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
  EXPECT_NE(error(R"({"text_allowed":1,"tools":[{"name":"f"}]})").find("'text_allowed'"), std::string::npos);
  EXPECT_NE(error(R"({"text_allowed":true,"prefix":"\n<c>","tools":[{"name":"f"}]})").find("marker"), std::string::npos)
      << "text before the calls' marker is the answer's";
}

// A byte vocabulary (ids 0-255), an end-of-generation token, and `extra`
// multi-byte tokens after them.
constexpr int32_t kEos = 256;
std::shared_ptr<const TokenTrie> ByteTrie(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> texts;
  for (int b = 0; b < 256; ++b) texts.emplace_back(1, static_cast<char>(b));
  texts.emplace_back();
  texts.insert(texts.end(), extra.begin(), extra.end());
  std::vector<TokenClass> classes(texts.size(), TokenClass::kText);
  classes[kEos] = TokenClass::kEog;
  return TokenTrie::Build(std::move(texts), std::move(classes)).value();
}

// Whether a sequence under `c` may generate `text` byte by byte and end.
bool Generates(const std::shared_ptr<const CompiledGrammar>& c, std::string_view text) {
  SequenceConstraint s = SequenceConstraint::Create(c).value();
  for (unsigned char b : text) {
    if (!s.PrepareMask().ok() || !s.Allows(b) || !s.Accept(b).ok()) return false;
  }
  return s.PrepareMask().ok() && s.Allows(kEos);
}

// "auto": any text until the marker, the calls from there on, their
// arguments under the schemas; a marker whose prefix overlaps itself ("<<x>")
// is found wherever it completes.
TEST(ToolCallGbnf, TextAllowedUntilTheMarkerBeginsTheCalls) {
  ToolCallSpec spec = Spec();
  spec.text_allowed = true;
  spec.max_calls = 2;
  GrammarCache cache;
  const auto trie = ByteTrie();
  std::shared_ptr<const CompiledGrammar> c = cache.Get({ConstraintKind::kToolCall, ToolCallSpecText(spec)}, trie).value();
  ASSERT_NE(c->trigger, nullptr);
  const std::string ping = "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>";
  for (const std::string text : {"", "It is cold.", "a < b, <tool> <tool_cal <<tool_call", "\xc3\xa9t\xc3\xa9 <"}) {
    EXPECT_TRUE(Generates(c, text)) << text;
    EXPECT_TRUE(Generates(c, text + ping)) << text;
    EXPECT_TRUE(Generates(c, text + ping + "\n" + ping)) << text;
    EXPECT_FALSE(Generates(c, text + "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"))
        << "arguments under the schema once the marker is written";
    EXPECT_FALSE(Generates(c, text + "<tool_call> and more text")) << text;
    EXPECT_FALSE(Generates(c, text + ping + " and after")) << text;
    EXPECT_FALSE(Generates(c, text + "<tool_call>\n{\"name\": \"ping\"")) << "a call cut short cannot end";
  }

  spec.syntax = ToolCallSyntax{"<<x>[", "", "", ", ", "]"};
  c = cache.Get({ConstraintKind::kToolCall, ToolCallSpecText(spec)}, trie).value();
  const std::string calls = "[{\"name\": \"ping\", \"arguments\": {}}]";
  EXPECT_TRUE(Generates(c, "a <<<x>" + calls));
  EXPECT_TRUE(Generates(c, "<x> <<x <<<x"));
  EXPECT_FALSE(Generates(c, "<<<<x> text"));

  // A bare-object family: an answer that opens with '{' is a call.
  spec.syntax = ToolCallSyntax{};
  spec.max_calls = 1;
  c = cache.Get({ConstraintKind::kToolCall, ToolCallSpecText(spec)}, trie).value();
  EXPECT_EQ(c->trigger, nullptr);
  EXPECT_TRUE(Generates(c, "{\"name\": \"ping\", \"arguments\": {}}"));
  EXPECT_TRUE(Generates(c, "Sunny. {\"a\": 1}"));
  EXPECT_TRUE(Generates(c, " \n It is {cold}"));
  EXPECT_TRUE(Generates(c, "  "));
  EXPECT_FALSE(Generates(c, "{\"name\": \"get_weather\", \"arguments\": {}}"));
  EXPECT_FALSE(Generates(c, "\n{\"name\": \"ping\", \"arguments\": {}}"));
  EXPECT_FALSE(Generates(c, "{cold}"));
}

// The trigger completes exactly where the text first holds it, fed in any
// pieces: markers and texts over two letters, where prefixes overlap most.
TEST(GrammarTrigger, CompletesWhereTheTextFirstHoldsIt) {
  const std::shared_ptr<const CompiledGrammar> grammar = CompileConstraint({ConstraintKind::kGrammar, "root ::= \"x\""});
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string marker(1 + rng() % 6, 'a'), text(rng() % 24, 'a');
    for (char& c : marker) c = "ab"[rng() % 2];
    for (char& c : text) c = "ab"[rng() % 2];
    const auto trigger = GrammarTrigger::Build(marker, grammar).value();
    GrammarTrigger::State state = 0;
    size_t done = std::string::npos;
    for (size_t at = 0; at < text.size() && done == std::string::npos;) {
      const size_t piece = std::min<size_t>(1 + rng() % 4, text.size() - at);
      const GrammarTrigger::Scan scan = trigger->Run(state, std::string_view(text).substr(at, piece));
      if (scan.completed) done = at + scan.end;
      state = scan.state;
      at += piece;
    }
    const size_t found = text.find(marker);
    EXPECT_EQ(done, found == std::string::npos ? found : found + marker.size()) << marker << " in " << text;
  }
  EXPECT_FALSE(GrammarTrigger::Build("", grammar).ok());
  EXPECT_FALSE(GrammarTrigger::Build(std::string(kMaxTriggerBytes + 1, 'a'), grammar).ok());
}

// Tokens that hold the marker, whole or its end, wake the grammar with what
// follows it in the token: refused while waiting when the calls cannot begin
// so, and a sequence that accepts one is inside the calls.
TEST(ToolCallGbnf, ATokenThatCompletesTheMarkerStartsTheCalls) {
  ToolCallSpec spec = Spec();
  spec.text_allowed = true;
  const std::vector<std::string> extra = {"<tool_call>", "ok <tool_call>\n{", "<tool_call> hi", "call>\n", "call>x"};
  const int32_t whole = 257, opening = 258, wrong = 259, tail = 260, wrong_tail = 261;
  GrammarCache cache;
  std::shared_ptr<const CompiledGrammar> c =
      cache.Get({ConstraintKind::kToolCall, ToolCallSpecText(spec)}, ByteTrie(extra)).value();
  SequenceConstraint s = SequenceConstraint::Create(c).value();
  ASSERT_TRUE(s.PrepareMask().ok());
  EXPECT_TRUE(s.Allows(whole) && s.Allows(opening) && s.Allows('<') && s.Allows(kEos));
  EXPECT_FALSE(s.Allows(wrong));
  for (unsigned char b : std::string_view("Hm. <tool_")) ASSERT_TRUE(s.Accept(b).ok());
  ASSERT_TRUE(s.PrepareMask().ok());
  EXPECT_TRUE(s.Allows(tail) && s.Allows(whole));
  EXPECT_FALSE(s.Allows(wrong_tail));
  ASSERT_TRUE(s.Accept(tail).ok());
  ASSERT_TRUE(s.PrepareMask().ok());
  EXPECT_TRUE(s.Allows('{'));
  EXPECT_FALSE(s.Allows('x') || s.Allows(kEos)) << "inside the call";
  EXPECT_FALSE(s.Accept(wrong).ok());

  // Replayed (a parked or recovered sequence): the same place.
  SequenceConstraint again = SequenceConstraint::Create(c, std::vector<int32_t>{'H', opening}).value();
  ASSERT_TRUE(again.PrepareMask().ok());
  EXPECT_TRUE(again.Allows('"'));
  EXPECT_FALSE(again.Allows(kEos));
  EXPECT_FALSE(SequenceConstraint::Create(c, std::vector<int32_t>{wrong}).ok());
}

}  // namespace
}  // namespace valet
