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
// Bad requests are 400: InvalidArgument, OutOfRange (over the context) and
// ResourceExhausted (the scheduler refused a task too large for the KV pool
// even alone). Anything else is the server's fault (500).
ApiError ErrorFromStatus(const Status& status);

}  // namespace valet
