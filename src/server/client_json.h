// Every request body a client sends is parsed here, with the nesting limit
// (kMaxJsonDepth, common/json.h) checked before any DOM is built: a 400 KB
// body of 200,000 nested arrays must be refused, not turned into a document
// whose copies and dumps recurse 200,000 deep (the server's stack overflowed
// on one).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <variant>

#include "server/api_error.h"

namespace valet {

// The parsed body, or a 400 with code "invalid_json" (malformed, or nested
// deeper than kMaxJsonDepth).
std::variant<nlohmann::json, ApiError> ParseClientJson(std::string_view body);

}  // namespace valet
