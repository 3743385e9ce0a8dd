// The tools a chat request offers and how the answer may use them:
//   "tools": [{"type": "function", "function": {"name": ..., "description": ...,
//                                               "parameters": {...}, "strict": ...}}, ...]
//   "tool_choice": "none" | "auto" | "required" | {"type": "function", "function": {"name": ...}}
//   "parallel_tool_calls": true | false
// and what an assistant message called (its "tool_calls", each {"id", "type":
// "function", "function": {"name", "arguments": "<a JSON object's text>"}}).
// Parameters are read in document order (a schema's properties are generated
// in the order it lists them).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "valet/task.h"

namespace valet {

// `choice`: kNone when the request offers no tools; parallel_tool_calls is
// off unless asked for, as llama-server has it: a model that keeps calling
// under a required call's grammar would otherwise write calls until
// max_tokens cuts them.
std::optional<ApiError> ReadTools(const nlohmann::json& body, std::string_view body_text,
                                  std::vector<ToolDefinition>* tools, ToolChoice* choice);

// messages[i].tool_calls (`param` names the message).
std::optional<ApiError> ReadToolCalls(const nlohmann::json& message, const std::string& param,
                                      std::vector<ToolCall>* out);

}  // namespace valet
