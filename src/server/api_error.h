// OpenAI-style error responses: {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "valet/status.h"

namespace valet {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending request field; empty: null
  std::string code;   // a machine-readable reason; empty: null

  nlohmann::json Body() const;
  std::string ToJson() const;
};

ApiError BadRequest(std::string message, std::string param = "", std::string code = "");
// Bad requests (InvalidArgument, OutOfRange) are 400; anything else is the
// server's fault (500) except a full KV pool or store (503).
ApiError ErrorFromStatus(const Status& status);

}  // namespace valet
