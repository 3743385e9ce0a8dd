// The small endpoints: lifecycle events, the task list, models, health,
// Prometheus metrics and tokenization.
#pragma once

#include "server/http/http_message.h"
#include "server/server_context.h"

namespace valet {

// POST /v1/lifecycle {"event": "ON_STOP"} -> {"state": "CREATED"}; an event
// out of order is 409 with the current state.
http::HttpResponse HandleLifecycle(ServerContext& ctx, const http::HttpRequest& req);
// POST /v1/power: a power event (status_requests.h), merged into the last.
http::HttpResponse HandlePower(ServerContext& ctx, const http::HttpRequest& req);
// GET /v1/tasks: the server's tasks (unfinished, then the last finished ones).
http::HttpResponse HandleTasks(ServerContext& ctx);
http::HttpResponse HandleModels(ServerContext& ctx);
http::HttpResponse HandleHealth(ServerContext& ctx);
http::HttpResponse HandleMetrics(ServerContext& ctx);
// POST /tokenize {"content": "...", "add_special": false} -> {"tokens": [...]},
// as llama-server has it, so a client can size texts in the model's tokens.
http::HttpResponse HandleTokenize(ServerContext& ctx, const http::HttpRequest& req);

}  // namespace valet
