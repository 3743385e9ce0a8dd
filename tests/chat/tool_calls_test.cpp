// Each family's tool-call syntax told from its real template, and each
// family's real output format read back into text and calls; what does not
// read as calls stays text, whole.
#include "chat/tool_calls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace valet {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

ToolCallSyntax SyntaxOf(const std::string& path) {
  const std::string source = ReadFile(path);
  EXPECT_FALSE(source.empty()) << path << " is missing (../shared beside the checkout)";
  return ToolCallSyntaxForTemplate(source);
}

const std::string kShared = std::string(VALET_SHARED_DIR) + "/chat-templates/";

TEST(ToolCallSyntax, EachFamilyFromItsTemplate) {
  for (const char* qwen : {"Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja"}) {
    const ToolCallSyntax s = SyntaxOf(kShared + qwen);
    EXPECT_EQ(s.call_prefix, "<tool_call>\n") << qwen;
    EXPECT_EQ(s.call_suffix, "\n</tool_call>") << qwen;
    EXPECT_EQ(s.arguments_key, "arguments") << qwen;
  }
  const ToolCallSyntax llama = SyntaxOf(kShared + "meta-llama-Llama-3.2-3B-Instruct.jinja");
  EXPECT_EQ(llama.arguments_key, "parameters");
  EXPECT_EQ(llama.call_prefix, "");
  EXPECT_EQ(llama.max_calls, 1u);
  EXPECT_EQ(SyntaxOf(kShared + "mistralai-Mistral-Nemo-Instruct-2407.jinja").prefix, "[TOOL_CALLS][");
  EXPECT_EQ(SyntaxOf(kShared + "ibm-granite-granite-3.3-2B-Instruct.jinja").prefix, "<|tool_call|>[");
  EXPECT_FALSE(SyntaxOf(kShared + "microsoft-Phi-3.5-mini-instruct.jinja").template_shows_tools);
  EXPECT_FALSE(SyntaxOf(std::string(VALET_REPO_TEMPLATES) + "/google-gemma-3-it.jinja").template_shows_tools);
  EXPECT_TRUE(SyntaxOf(kShared + "Qwen-Qwen3-0.6B.jinja").template_shows_tools);
}

void ExpectCalls(const ParsedToolCalls& p, const std::string& content, std::vector<ParsedCall> calls) {
  EXPECT_EQ(p.content, content);
  ASSERT_EQ(p.calls.size(), calls.size()) << p.content;
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(p.calls[i].name, calls[i].name);
    EXPECT_EQ(p.calls[i].arguments, calls[i].arguments);
  }
}

TEST(ToolCallSyntax, QwenCallsInTags) {
  const ToolCallSyntax s = ToolCallSyntaxForTemplate("<tool_call>");
  ExpectCalls(ParseToolCalls("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>", s),
              "", {{"get_weather", R"({"city":"Oslo"})"}});
  ExpectCalls(ParseToolCalls("Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
                             "<tool_call>{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}</tool_call>\n",
                             s),
              "Let me check.", {{"a", "{}"}, {"b", R"({"x":[1,2]})"}});
  // Not calls: no tag, a tag around no JSON, a call missing its arguments,
  // text after the calls, an unclosed tag.
  for (const char* text : {"It is sunny.", "<tool_call>\nsunny\n</tool_call>",
                           "<tool_call>\n{\"name\": \"a\"}\n</tool_call>",
                           "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call> and more",
                           "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}"}) {
    ExpectCalls(ParseToolCalls(text, s), text, {});
  }
}

TEST(ToolCallSyntax, LlamaAnswersWithOneObject) {
  const ToolCallSyntax s = ToolCallSyntaxForTemplate("{{ tools }} \"parameters\"");
  ExpectCalls(ParseToolCalls(" {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", s), "",
              {{"get_weather", R"({"city":"Oslo"})"}});
  // Arguments written as the text of an object, as some models do.
  ExpectCalls(ParseToolCalls(R"({"name": "f", "parameters": "{\"a\": 1}"})", s), "", {{"f", R"({"a":1})"}});
  for (const char* text : {"Hello", R"({"name": "f", "arguments": {}})", R"({"name": "f", "parameters": [1]})",
                           R"(Sure: {"name": "f", "parameters": {}})"}) {
    ExpectCalls(ParseToolCalls(text, s), text, {});
  }
}

TEST(ToolCallSyntax, MistralAndGraniteWriteAList) {
  const ToolCallSyntax mistral = ToolCallSyntaxForTemplate("[TOOL_CALLS]");
  ExpectCalls(ParseToolCalls("[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"q\": \"x\"}}, "
                             "{\"name\": \"b\", \"arguments\": {}}]",
                             mistral),
              "", {{"a", R"({"q":"x"})"}, {"b", "{}"}});
  const ToolCallSyntax granite = ToolCallSyntaxForTemplate("<|tool_call|>");
  ExpectCalls(ParseToolCalls("<|tool_call|>[{\"name\": \"a\", \"arguments\": {}}]", granite), "", {{"a", "{}"}});
  for (const char* text : {"<|tool_call|>[]", "<|tool_call|>{\"name\": \"a\", \"arguments\": {}}",
                           "<|tool_call|>[{\"name\": 1, \"arguments\": {}}]"}) {
    ExpectCalls(ParseToolCalls(text, granite), text, {});
  }
}

}  // namespace
}  // namespace valet
