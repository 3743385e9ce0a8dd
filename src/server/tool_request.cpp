#include "server/tool_request.h"

#include "common/json.h"
#include "server/client_text.h"

namespace valet {
namespace {

using nlohmann::json;
using MaybeError = std::optional<ApiError>;

// A string member of an object, or a TypeError naming it.
MaybeError ReadString(const json& object, const char* key, const std::string& param, bool required,
                      std::string* out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (!required) return std::nullopt;
    return BadRequest("'" + param + "." + key + "' is required", param + "." + key, "missing_field");
  }
  if (!it->is_string()) return TypeError(param + "." + key, "a string");
  *out = it->get<std::string>();
  return std::nullopt;
}

// {"type": "function", "function": {...}} with the type checked; the inner object.
const json* FunctionOf(const json& item) {
  if (!item.is_object()) return nullptr;
  auto type = item.find("type");
  if (type != item.end() && !(type->is_string() && type->get_ref<const std::string&>() == "function")) return nullptr;
  auto f = item.find("function");
  return f != item.end() && f->is_object() ? &*f : nullptr;
}

MaybeError ReadTool(const json& item, const Json& ordered, size_t index, ToolDefinition* out) {
  const std::string param = "tools[" + std::to_string(index) + "]";
  const json* f = FunctionOf(item);
  if (f == nullptr) return TypeError(param, "{\"type\": \"function\", \"function\": {...}}");
  if (auto e = ReadString(*f, "name", param + ".function", true, &out->name)) return e;
  if (auto e = ReadString(*f, "description", param + ".function", false, &out->description)) return e;
  if (auto strict = f->find("strict"); strict != f->end() && !strict->is_null() && !strict->is_boolean()) {
    return TypeError(param + ".function.strict", "a boolean");
  }
  auto parameters = f->find("parameters");
  if (parameters == f->end() || parameters->is_null()) return std::nullopt;
  if (!parameters->is_object()) return TypeError(param + ".function.parameters", "a JSON Schema object");
  const Json* in_order = FindMember((*FindMember(ordered, "tools"))[index].at("function"), "parameters");
  out->parameters = DumpJson(*in_order);
  return std::nullopt;
}

MaybeError ReadChoice(const json& body, bool has_tools, ToolChoice* choice) {
  choice->kind = has_tools ? ToolChoice::Kind::kAuto : ToolChoice::Kind::kNone;
  auto it = body.find("tool_choice");
  if (it != body.end() && !it->is_null()) {
    if (it->is_string()) {
      const std::string& s = it->get_ref<const std::string&>();
      if (s == "none") {
        choice->kind = ToolChoice::Kind::kNone;
      } else if (s == "auto") {
        choice->kind = ToolChoice::Kind::kAuto;
      } else if (s == "required") {
        choice->kind = ToolChoice::Kind::kRequired;
      } else {
        return BadRequest("'tool_choice' must be \"none\", \"auto\", \"required\" or a function", "tool_choice",
                          "invalid_value");
      }
    } else {
      const json* f = FunctionOf(*it);
      if (f == nullptr) return TypeError("tool_choice", "\"none\", \"auto\", \"required\" or {\"type\": \"function\", ...}");
      if (auto e = ReadString(*f, "name", "tool_choice.function", true, &choice->name)) return e;
      choice->kind = ToolChoice::Kind::kNamed;
    }
    if (!has_tools && choice->kind != ToolChoice::Kind::kNone) {
      return BadRequest("'tool_choice' asks for a call but the request has no 'tools'", "tool_choice", "invalid_value");
    }
  }
  auto parallel = body.find("parallel_tool_calls");
  if (parallel != body.end() && !parallel->is_null()) {
    if (!parallel->is_boolean()) return TypeError("parallel_tool_calls", "a boolean");
    choice->parallel = parallel->get<bool>();
  }
  return std::nullopt;
}

}  // namespace

MaybeError ReadTools(const json& body, std::string_view body_text, std::vector<ToolDefinition>* tools,
                     ToolChoice* choice) {
  auto it = body.find("tools");
  const bool has_tools = it != body.end() && !it->is_null() && !(it->is_array() && it->empty());
  if (has_tools) {
    if (!it->is_array()) return TypeError("tools", "an array of functions");
    if (it->size() > kMaxTools) {
      return BadRequest("at most " + std::to_string(kMaxTools) + " tools", "tools", "invalid_value");
    }
    // The same body again, keys in the order the client wrote them.
    Result<Json> ordered = ParseJson(body_text);
    if (!ordered.ok()) return BadRequest(ordered.status().message(), "", "invalid_json");
    tools->resize(it->size());
    for (size_t i = 0; i < it->size(); ++i) {
      if (auto e = ReadTool((*it)[i], *ordered, i, &(*tools)[i])) return e;
    }
  }
  if (auto e = ReadChoice(body, has_tools, choice)) return e;
  if (choice->kind == ToolChoice::Kind::kNamed) {
    for (const ToolDefinition& t : *tools) {
      if (t.name == choice->name) return std::nullopt;
    }
    return BadRequest("'tool_choice' names " + QuoteClientText(choice->name) + ", which is not among 'tools'",
                      "tool_choice", "invalid_value");
  }
  return std::nullopt;
}

MaybeError ReadToolCalls(const json& message, const std::string& param, std::vector<ToolCall>* out) {
  auto it = message.find("tool_calls");
  if (it == message.end() || it->is_null()) return std::nullopt;
  if (!it->is_array()) return TypeError(param + ".tool_calls", "an array");
  out->resize(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string at = param + ".tool_calls[" + std::to_string(i) + "]";
    const json* f = FunctionOf((*it)[i]);
    if (f == nullptr) return TypeError(at, "{\"id\": ..., \"type\": \"function\", \"function\": {...}}");
    if (auto e = ReadString((*it)[i], "id", at, false, &(*out)[i].id)) return e;
    if (auto e = ReadString(*f, "name", at + ".function", true, &(*out)[i].name)) return e;
    if (auto e = ReadString(*f, "arguments", at + ".function", true, &(*out)[i].arguments)) return e;
  }
  return std::nullopt;
}

}  // namespace valet
