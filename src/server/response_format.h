// The output constraint a completion request asks for (valet/constraint.h):
//   "response_format": {"type": "text"}                       none
//                      {"type": "json_object"}                any JSON object
//                      {"type": "json_schema", "json_schema":
//                         {"name": ..., "schema": {...}, "strict": ...}}
//                      {"type": "json_object", "schema": {...}}  (llama-server's form)
//   "grammar": "<GBNF>"                                       (llama-server's field)
// The constraint is only read here; it is compiled at submission, where one
// that does not compile is a 400 naming what is wrong.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "server/api_error.h"
#include "valet/constraint.h"

namespace valet {

// `body` is the parsed request; `body_text` the same request as sent, from
// which a schema is read again in document order (nlohmann::json sorts
// keys; a schema's properties are generated in the order it lists them).
std::optional<ApiError> ReadResponseFormat(const nlohmann::json& body, std::string_view body_text,
                                           Constraint* out);

}  // namespace valet
