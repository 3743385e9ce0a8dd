#include "chat/tool_calls.h"

#include <optional>

#include "common/json.h"

namespace valet {
namespace {

constexpr std::string_view kSpace = " \t\r\n";

std::string_view Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

// One call object: {name_key: "f", arguments_key: {...}} (arguments also as
// the text of an object, as some models write them).
std::optional<ParsedCall> ReadCall(const Json& call, const ToolCallSyntax& syntax) {
  if (!call.is_object()) return std::nullopt;
  const Json* name = FindMember(call, syntax.name_key);
  const Json* arguments = FindMember(call, syntax.arguments_key);
  if (name == nullptr || !name->is_string() || name->get_ref<const std::string&>().empty()) return std::nullopt;
  if (arguments == nullptr) return std::nullopt;
  if (arguments->is_string()) {
    Result<Json> inner = ParseJson(arguments->get_ref<const std::string&>());
    if (!inner.ok() || !inner->is_object()) return std::nullopt;
    return ParsedCall{name->get<std::string>(), DumpJson(*inner)};
  }
  if (!arguments->is_object()) return std::nullopt;
  return ParsedCall{name->get<std::string>(), DumpJson(*arguments)};
}

// Calls written as one JSON array after the prefix (Mistral, Granite).
bool ReadArray(std::string_view rest, const ToolCallSyntax& syntax, std::vector<ParsedCall>* out) {
  Result<Json> array = ParseJson(Trim(rest));
  if (!array.ok() || !array->is_array() || array->empty() || array->size() > syntax.max_calls) return false;
  for (const Json& element : *array) {
    std::optional<ParsedCall> call = ReadCall(element, syntax);
    if (!call) return false;
    out->push_back(std::move(*call));
  }
  return true;
}

// Calls each wrapped in call_prefix ... call_suffix (Hermes), or one bare
// object (Llama 3, the generic form).
bool ReadWrapped(std::string_view rest, const ToolCallSyntax& syntax, std::vector<ParsedCall>* out) {
  const std::string_view open = Trim(syntax.call_prefix), close = Trim(syntax.call_suffix);
  rest = Trim(rest);
  while (!rest.empty()) {
    if (out->size() == syntax.max_calls || rest.substr(0, open.size()) != open) return false;
    rest.remove_prefix(open.size());
    size_t end = close.empty() ? rest.size() : rest.find(close);
    if (end == std::string_view::npos) return false;
    Result<Json> object = ParseJson(Trim(rest.substr(0, end)));
    if (!object.ok()) return false;
    std::optional<ParsedCall> call = ReadCall(*object, syntax);
    if (!call) return false;
    out->push_back(std::move(*call));
    rest = Trim(rest.substr(end + close.size()));
    const std::string_view separator = Trim(syntax.separator);
    if (!separator.empty() && rest.substr(0, separator.size()) == separator) rest = Trim(rest.substr(separator.size()));
  }
  return !out->empty();
}

}  // namespace

ToolCallSyntax ToolCallSyntaxForTemplate(std::string_view source) {
  const auto has = [source](std::string_view s) { return source.find(s) != std::string_view::npos; };
  if (has("<tool_call>")) {
    return {.call_prefix = "<tool_call>\n", .call_suffix = "\n</tool_call>", .separator = "\n", .max_calls = 8};
  }
  if (has("[TOOL_CALLS]")) return {.prefix = "[TOOL_CALLS][", .separator = ", ", .suffix = "]", .max_calls = 8};
  if (has("<|tool_call|>")) return {.prefix = "<|tool_call|>[", .separator = ", ", .suffix = "]", .max_calls = 8};
  if (has("\"parameters\"") && has("tools")) return {.arguments_key = "parameters"};
  return {.template_shows_tools = has("tools")};
}

ParsedToolCalls ParseToolCalls(std::string_view text, const ToolCallSyntax& syntax) {
  ParsedToolCalls out{std::string(text), {}};
  const bool array = !syntax.prefix.empty() && syntax.prefix.back() == '[';
  // Where the calls start; a bare object must be the whole answer.
  const std::string_view marker = ToolCallMarker(syntax);
  size_t start = 0;
  if (!marker.empty()) {
    start = text.find(marker);
    if (start == std::string_view::npos) return out;
  } else if (Trim(text).substr(0, 1) != "{") {
    return out;
  }
  std::vector<ParsedCall> calls;
  const bool ok = array ? ReadArray(text.substr(start + marker.size()), syntax, &calls)
                        : ReadWrapped(text.substr(start), syntax, &calls);
  if (!ok) return out;
  out.content = std::string(Trim(text.substr(0, start)));
  out.calls = std::move(calls);
  return out;
}

}  // namespace valet
