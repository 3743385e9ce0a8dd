// GET /v1/tasks/{id}, GET /v1/tasks/{id}/result and DELETE /v1/tasks/{id}:
// a durable task's state, its result, and forgetting it (docs/durable.md,
// "Over HTTP"). `id` is the task's durable key, already checked (task_path.h).
#pragma once

#include "server/http/http_message.h"
#include "server/server_context.h"
#include "server/task_path.h"

namespace valet {

// {"id", "object": "valet.task", "state", "tier", "endpoint", "tokens",
// "text", "completion_tokens", "finish_reason", "error"}; 404 when unknown.
http::HttpResponse HandleTaskStatus(ServerContext& ctx, const TaskPath& path);
// 202 with the status object's head while the task runs; 200 with the
// completion object the non-durable request answers once it is DONE
// (rebuilt from the journal, also after a restart); the task's error once
// it FAILED; 404 when unknown.
http::HttpResponse HandleTaskResult(ServerContext& ctx, const TaskPath& path);
// Cancels a running task or acknowledges an ended one: either way its
// journal is removed and the id is unknown from then on. 404 when unknown.
http::HttpResponse HandleTaskDelete(ServerContext& ctx, const TaskPath& path);

}  // namespace valet
