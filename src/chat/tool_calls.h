// How a model family writes tool calls (common/tool_call_syntax.h), told
// from its chat template, and a model's output read back into its text and
// its calls.
//
//   Qwen 2.5/3, Hermes (the template shows <tool_call>):
//     <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, one per call
//   Llama 3.1-3.3 (the template asks for "parameters"):
//     {"name": "f", "parameters": {...}}, the whole answer, one call
//   Mistral ([TOOL_CALLS]):    [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
//   Granite 3 (<|tool_call|>): <|tool_call|>[{"name": "f", "arguments": {...}}, ...]
//   any other template:        {"name": "f", "arguments": {...}}, one call,
//                              the tools described in a system message
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/tool_call_syntax.h"

namespace valet {

ToolCallSyntax ToolCallSyntaxForTemplate(std::string_view template_source);

struct ParsedCall {
  std::string name;
  std::string arguments;  // the object the model wrote, as compact JSON
};

struct ParsedToolCalls {
  std::string content;  // the text before the first call (all of it when there is none)
  std::vector<ParsedCall> calls;
};

// The calls at the end of `text` in `syntax`: each a JSON object with a
// string name and an object of arguments, after the last the syntax's suffix
// and nothing but whitespace. Text that does not read as calls in every
// part is content, whole.
ParsedToolCalls ParseToolCalls(std::string_view text, const ToolCallSyntax& syntax);

}  // namespace valet
