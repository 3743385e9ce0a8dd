#include "server/response_format.h"

#include <string>

#include "common/json.h"

namespace valet {
namespace {

using nlohmann::json;

// The schema at `path` of the body re-read in document order.
std::optional<ApiError> OrderedSchema(std::string_view body_text,
                                      std::initializer_list<const char*> path, Constraint* out) {
  Result<Json> ordered = ParseJson(body_text);
  if (!ordered.ok()) return BadRequest(ordered.status().message(), "", "invalid_json");
  const Json* at = &ordered.value();
  for (const char* key : path) {
    at = FindMember(*at, key);
    if (at == nullptr)
      return BadRequest("the request changed between two reads", "", "invalid_json");
  }
  *out = {ConstraintKind::kJsonSchema, DumpJson(*at)};
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ReadResponseFormat(const json& body, std::string_view body_text,
                                           Constraint* out) {
  *out = {};
  const auto grammar = body.find("grammar");
  if (grammar != body.end() && !grammar->is_null()) {
    if (!grammar->is_string()) return TypeError("grammar", "a string (a GBNF grammar)");
    *out = {ConstraintKind::kGrammar, grammar->get<std::string>()};
  }
  const auto format = body.find("response_format");
  if (format == body.end() || format->is_null()) return std::nullopt;
  if (!format->is_object()) return TypeError("response_format", "an object");
  const auto type = format->find("type");
  if (type == format->end() || !type->is_string()) {
    return TypeError("response_format.type", "\"text\", \"json_object\" or \"json_schema\"");
  }
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "text") return std::nullopt;
  if (out->active()) {
    return BadRequest("'grammar' and a JSON 'response_format' exclude each other", "grammar",
                      "invalid_value");
  }
  if (t == "json_object") {
    if (format->contains("schema"))
      return OrderedSchema(body_text, {"response_format", "schema"}, out);
    *out = {ConstraintKind::kJsonObject, ""};
    return std::nullopt;
  }
  if (t != "json_schema") {
    return BadRequest("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"",
                      "response_format.type", "invalid_value");
  }
  const auto spec = format->find("json_schema");
  if (spec == format->end() || !spec->is_object())
    return TypeError("response_format.json_schema", "an object");
  if (const auto strict = spec->find("strict");
      strict != spec->end() && !strict->is_null() && !strict->is_boolean()) {
    return TypeError("response_format.json_schema.strict", "a boolean");
  }
  if (const auto name = spec->find("name"); name != spec->end() && !name->is_string()) {
    return TypeError("response_format.json_schema.name", "a string");
  }
  if (!spec->contains("schema")) {
    return BadRequest("'response_format.json_schema.schema' is required",
                      "response_format.json_schema.schema", "invalid_value");
  }
  return OrderedSchema(body_text, {"response_format", "json_schema", "schema"}, out);
}

}  // namespace valet
