#include "server/api_error.h"

#include <string_view>
#include <utility>

#include "server/client_text.h"

namespace valet {

namespace {

// Every message is written by valet, but some carry text from elsewhere (a
// chat template's raise_exception, a quoted value): a reply stays small
// whatever it says.
constexpr size_t kMaxMessageBytes = 1024;
constexpr size_t kMaxParamBytes = 128;

nlohmann::json OrNull(std::string_view s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

}  // namespace

nlohmann::json ApiError::Body() const {
  nlohmann::json error = {{"message", Utf8Prefix(message, kMaxMessageBytes)},
                          {"type", type},
                          {"param", OrNull(Utf8Prefix(param, kMaxParamBytes))},
                          {"code", code.empty() ? DefaultCode(http_status) : code}};
  return nlohmann::json{{"error", std::move(error)}};
}

std::string ApiError::ToJson() const {
  return Body().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError TypeError(const std::string& param, const char* expected) {
  return BadRequest("'" + param + "' must be " + expected, param, "invalid_type");
}

ApiError BadRequest(std::string message, std::string param, std::string code) {
  ApiError e;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

ApiError ApiErrorOf(int http_status, std::string message, std::string code) {
  ApiError e = BadRequest(std::move(message), "", std::move(code));
  e.http_status = http_status;
  if (http_status >= 500) e.type = "server_error";
  return e;
}

ApiError ErrorFromStatus(const Status& status) {
  ApiError e;
  e.message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      e.code = "invalid_value";
      return e;
    case StatusCode::kUnsupported:  // well-formed, and not something valet does (a schema keyword)
      e.code = "unsupported_value";
      return e;
    case StatusCode::kOutOfRange:
      e.code = "context_length_exceeded";
      return e;
    case StatusCode::kResourceExhausted:
      // The scheduler admits every task that fits the KV pool alone and then
      // never fails one for memory, so this is a request too large for the
      // pool: the client's to shrink, like a prompt over the context.
      e.message = "the request does not fit the server's KV cache memory: " + e.message;
      e.code = "context_length_exceeded";
      return e;
    default:
      e.http_status = 500;
      e.type = "server_error";
      e.code = "internal_error";
      return e;
  }
}

std::string DefaultCode(int http_status) {
  switch (http_status) {
    case 400: return "invalid_request";
    case 401: return "invalid_api_key";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 413: return "body_too_large";
    case 429: return "rate_limit_exceeded";
    default: break;
  }
  if (http_status >= 500 && http_status < 600) return "internal_error";
  return "http_" + std::to_string(http_status);
}

}  // namespace valet
