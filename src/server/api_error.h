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
  // A machine-readable reason. Never null in a reply: left empty, Body()
  // fills in the HTTP status's (DefaultCode), so clients can always switch on it.
  std::string code;

  nlohmann::json Body() const;
  std::string ToJson() const;
};

// A 400; `param` may be empty (null), `code` names the reason.
ApiError BadRequest(std::string message, std::string param, std::string code);
// A 400 "invalid_type": "'<param>' must be <expected>".
ApiError TypeError(const std::string& param, const char* expected);
// Any status without a param; 5xx are "server_error"s.
ApiError ApiErrorOf(int http_status, std::string message, std::string code);
// Bad requests are 400: InvalidArgument ("invalid_value"), OutOfRange (over
// the context) and ResourceExhausted (the scheduler refused a task too large
// for the KV pool even alone), both "context_length_exceeded". Anything else
// is the server's fault (500, "internal_error").
ApiError ErrorFromStatus(const Status& status);
// The code of an error that names none: "invalid_request" (400),
// "invalid_api_key" (401), "not_found" (404), "method_not_allowed" (405),
// "body_too_large" (413), "rate_limit_exceeded" (429), "internal_error"
// (5xx), else "http_<status>".
std::string DefaultCode(int http_status);

}  // namespace valet
