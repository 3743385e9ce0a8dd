#include "server/client_json.h"

#include <string>

#include "common/json.h"

namespace valet {

namespace {

ApiError InvalidJson(std::string message) { return BadRequest(std::move(message), "", "invalid_json"); }

}  // namespace

std::variant<nlohmann::json, ApiError> ParseClientJson(std::string_view body) {
  const JsonCheck check = CheckJson(body);
  if (check.too_deep) {
    return InvalidJson("the request body nests objects and arrays deeper than " + std::to_string(kMaxJsonDepth) +
                       " levels");
  }
  if (!check.ok) {
    return InvalidJson("the request body is not valid JSON (at byte " + std::to_string(check.error_position) + ")");
  }
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return InvalidJson("the request body is not valid JSON");
  return parsed;
}

}  // namespace valet
