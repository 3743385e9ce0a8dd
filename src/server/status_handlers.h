// The small endpoints: lifecycle events, the task list, models, health,
// Prometheus metrics and tokenization.
#pragma once

#include <httplib.h>

#include "server/server_context.h"

namespace valet {

// POST /v1/lifecycle {"event": "ON_STOP"} -> {"state": "CREATED"}; an event
// out of order is 409 with the current state.
void HandleLifecycle(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// GET /v1/tasks: the server's tasks (unfinished, then the last finished ones).
void HandleTasks(ServerContext& ctx, httplib::Response& res);
void HandleModels(ServerContext& ctx, httplib::Response& res);
void HandleHealth(ServerContext& ctx, httplib::Response& res);
void HandleMetrics(ServerContext& ctx, httplib::Response& res);
// POST /tokenize {"content": "...", "add_special": false} -> {"tokens": [...]},
// as llama-server has it, so a client can size texts in the model's tokens.
void HandleTokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace valet
