// The bodies of the small POST endpoints, parsed apart from HTTP so they can
// be tested as functions: /v1/lifecycle and /tokenize. Both go through
// ParseClientJson (client_json.h) and its nesting limit.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "server/api_error.h"
#include "valet/scheduler.h"

namespace valet {

// {"event": "ON_STOP"} (any case) -> the event; else a 400 naming "event".
std::variant<LifecycleEvent, ApiError> ParseLifecycleRequest(std::string_view body);

struct TokenizeRequest {
  std::string content;
  bool add_special = false;  // BOS, as llama-server's flag means
};
// {"content": string, "add_special": boolean (optional)}; else a 400.
std::variant<TokenizeRequest, ApiError> ParseTokenizeRequest(std::string_view body);

}  // namespace valet
