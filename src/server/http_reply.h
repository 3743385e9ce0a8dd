// Writing JSON and error replies into httplib responses.
#pragma once

#include <httplib.h>

#include <string>

#include "server/api_error.h"
#include "server/server_context.h"

namespace valet {

void SendJson(httplib::Response& res, int status, const std::string& json);
// Sets the status and the OpenAI-style body, and counts it in /metrics.
void SendError(ServerContext& ctx, httplib::Response& res, const ApiError& error);

}  // namespace valet
