// JSON and error replies in the transport's HttpResponse.
#pragma once

#include <string>

#include "server/api_error.h"
#include "server/http/http_message.h"
#include "server/server_context.h"

namespace valet {

http::HttpResponse JsonReply(int status, std::string json);
// The OpenAI-style error body, counted in /metrics.
http::HttpResponse ErrorReply(ServerContext& ctx, const ApiError& error);

}  // namespace valet
