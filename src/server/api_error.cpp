#include "server/api_error.h"

#include <utility>

namespace valet {

namespace {

nlohmann::json OrNull(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

}  // namespace

nlohmann::json ApiError::Body() const {
  nlohmann::json error = {{"message", message}, {"type", type}, {"param", OrNull(param)}, {"code", OrNull(code)}};
  return nlohmann::json{{"error", std::move(error)}};
}

std::string ApiError::ToJson() const {
  return Body().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError BadRequest(std::string message, std::string param, std::string code) {
  ApiError e;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

ApiError ErrorFromStatus(const Status& status) {
  ApiError e;
  e.message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return e;
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
      return e;
  }
}

}  // namespace valet
