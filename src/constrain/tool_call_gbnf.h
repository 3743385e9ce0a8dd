// Tool calls as GBNF: what a kToolCall constraint's text holds and the
// grammar it becomes. The text names how the model's family writes a call
// (chat/tool_calls.h knows the families) and the tools it may call:
//
//   {"prefix": "", "call_prefix": "<tool_call>\n", "call_suffix": "\n</tool_call>",
//    "separator": "\n", "suffix": "", "name_key": "name", "arguments_key": "arguments",
//    "max_calls": 1, "tools": [{"name": "get_weather", "parameters": {...}}, ...]}
//
// and the output is prefix, 1..max_calls calls joined by separator, suffix;
// a call is call_prefix {"<name_key>": "<a tool's name>", "<arguments_key>":
// <its arguments under its parameters' schema>} call_suffix, spaced as
// Python's json.dumps spaces it (the form the templates show the models).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "constrain/json_schema_gbnf.h"
#include "common/tool_call_syntax.h"
#include "valet/status.h"

namespace valet {

// A spec from its constraint text (common/tool_call_syntax.h writes it;
// InvalidArgument naming what is wrong; the text is bounded by
// options.max_schema_bytes before it is parsed).
Result<ToolCallSpec> ParseToolCallSpec(std::string_view text, const JsonSchemaOptions& options = {});

// With text allowed, the marker the calls begin at (ToolCallMarker; empty
// for a bare-object family or without text): the grammar then applies from
// after it (constraint_grammar.h's trigger).
std::string ToolCallTrigger(const ToolCallSpec& spec);

// The grammar of the spec's calls (Unsupported naming a tool's schema keyword
// the schema compiler refuses, with the tool's name): with a trigger, the
// calls after their marker; for a bare-object family with text allowed, the
// calls or text that does not open with '{'.
Result<std::string> ToolCallsToGbnf(const ToolCallSpec& spec, const JsonSchemaOptions& options = {});

}  // namespace valet
