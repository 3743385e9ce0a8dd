#include "common/tool_call_syntax.h"

#include <utility>

namespace valet {

std::string& ToolCallSyntaxField(ToolCallSyntax& s, std::string_view name) {
  if (name == "prefix") return s.prefix;
  if (name == "call_prefix") return s.call_prefix;
  if (name == "call_suffix") return s.call_suffix;
  if (name == "separator") return s.separator;
  if (name == "suffix") return s.suffix;
  if (name == "name_key") return s.name_key;
  return s.arguments_key;
}

std::string_view ToolCallMarker(const ToolCallSyntax& s) {
  constexpr std::string_view kSpace = " \t\r\n";
  std::string_view m = s.prefix.empty() ? std::string_view(s.call_prefix) : std::string_view(s.prefix);
  if (!s.prefix.empty() && m.back() == '[') m.remove_suffix(1);
  const size_t first = m.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return m.substr(first, m.find_last_not_of(kSpace) - first + 1);
}

std::string ToolCallSpecText(const ToolCallSpec& spec) {
  Json out = Json::object();
  ToolCallSyntax syntax = spec.syntax;
  for (std::string_view f : kToolCallSyntaxFields) out[std::string(f)] = ToolCallSyntaxField(syntax, f);
  out["max_calls"] = spec.max_calls;
  if (spec.text_allowed) out["text_allowed"] = true;
  Json tools = Json::array();
  for (const ToolSchema& t : spec.tools) tools.push_back(Json{{"name", t.name}, {"parameters", t.parameters}});
  out["tools"] = std::move(tools);
  return DumpJson(out);
}

}  // namespace valet
