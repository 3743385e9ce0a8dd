// Request fields valet cannot honour and that change what the answer means:
// tools and function calling, structured output, logit_bias, several choices,
// suffix/echo. Silently ignoring one would return a plausible answer to a
// different question, so each is a 400 naming the field (OpenAI's codes:
// "unsupported_parameter" for a field valet has no support for at all,
// "unsupported_value" for a value other than the one valet always gives).
// A field present with its no-op value (null, [], {}, "none", n = 1,
// response_format {"type": "text"}, ...) is accepted. Fields that change
// nothing in the output (user, store, metadata, service_tier, ...) stay
// ignored like any unknown field.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "server/api_error.h"
#include "server/completion_request.h"

namespace valet {

// The first unsupported field of `body` (an object) for `endpoint`, if any.
std::optional<ApiError> RefuseUnsupportedFields(const nlohmann::json& body, Endpoint endpoint);

}  // namespace valet
