// How a model family writes tool calls: the wrapper around each call's JSON
// object and the keys in it. chat/tool_calls.h tells it from a chat template
// and reads a model's output with it; constrain/tool_call_gbnf.h makes the
// grammar that generates it.
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace valet
