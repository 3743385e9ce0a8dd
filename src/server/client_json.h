// Every request body a client sends is parsed here, with a nesting limit
// checked before any DOM is built: a 400 KB body of 200,000 nested arrays
// must be refused, not turned into a document whose copies and dumps recurse
// 200,000 deep (the server's stack overflowed on one).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <variant>

#include "server/api_error.h"

namespace valet {

// Objects and arrays nested this deep are accepted; one more level is not.
// OpenAI's own bodies need five (messages[].content[] parts).
inline constexpr int kMaxClientJsonDepth = 64;

// The parsed body, or a 400 with code "invalid_json" (malformed, or nested
// deeper than kMaxClientJsonDepth). A first pass over SAX events tracks the
// depth and stops at the first level too deep; only a body that passes it is
// parsed into a document.
std::variant<nlohmann::json, ApiError> ParseClientJson(std::string_view body);

}  // namespace valet
