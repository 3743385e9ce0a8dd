// How a model family writes tool calls: the wrapper around each call's JSON
// object and the keys in it, and the kToolCall constraint's text, which names
// a syntax and the tools a call may name. chat/tool_calls.h tells the syntax
// from a chat template and reads a model's output with it;
// constrain/tool_call_gbnf.h reads the text back and makes the grammar that
// generates the calls.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"

namespace valet {

struct ToolCallSyntax {
  std::string prefix{};       // before the first call
  std::string call_prefix{};  // before each call's JSON
  std::string call_suffix{};  // after each call's JSON
  std::string separator{};    // between two calls
  std::string suffix{};       // after the last call
  std::string name_key = "name";
  std::string arguments_key = "arguments";
  uint32_t max_calls = 1;   // calls one answer may hold in this syntax
  bool template_shows_tools = true;  // false: valet describes the tools itself
  bool operator==(const ToolCallSyntax&) const = default;
};

// The syntax's strings by their names in the constraint text.
inline constexpr std::array<std::string_view, 7> kToolCallSyntaxFields = {
    "prefix", "call_prefix", "call_suffix", "separator", "suffix", "name_key", "arguments_key"};
std::string& ToolCallSyntaxField(ToolCallSyntax& syntax, std::string_view name);

struct ToolSchema {
  std::string name;
  Json parameters;  // a JSON Schema object
};

inline constexpr uint32_t kMaxToolCallsPerTurn = 16;

// Where an answer's calls begin: the prefix (without its list's '[') or
// else the first call's prefix, trimmed; empty for a family whose call is a
// bare JSON object (the whole answer, opening with '{').
std::string_view ToolCallMarker(const ToolCallSyntax& syntax);

struct ToolCallSpec {
  ToolCallSyntax syntax;
  std::vector<ToolSchema> tools;  // at least one
  uint32_t max_calls = 1;         // 1..kMaxToolCallsPerTurn
  // "auto": the answer may be text, and calls only from the marker on (for
  // a bare-object family: text that does not open with '{', or the calls).
  bool text_allowed = false;
};

// A kToolCall constraint's text (constrain/tool_call_gbnf.h has the format).
std::string ToolCallSpecText(const ToolCallSpec& spec);

}  // namespace valet
