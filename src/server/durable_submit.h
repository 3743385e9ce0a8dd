// Durable tasks' way in: a completion request with "durable": true is
// journaled by the scheduler and answered 202 at once with its id (its
// durable key); its callbacks only keep the server's tables current, since
// no client waits on the connection. At Start, the tasks a previous run left
// in the journal directory are recovered the same way.
#pragma once

#include <memory>
#include <optional>

#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/http/http_exchange.h"
#include "server/server_context.h"

namespace valet {

// A 400 for a durable request this server cannot take (no journal directory).
std::optional<ApiError> CheckDurableRequest(const ServerContext& ctx, const CompletionRequest& request);

// Submits a durable request holding its tier's `slot`: 202 {"id", "object":
// "valet.task", "state"}, or 409 for a key in use, 429 when the server holds
// DurableServerOptions::max_tasks already, or the scheduler's refusal.
void SubmitDurable(const std::shared_ptr<ServerContext>& ctx, const std::shared_ptr<http::HttpExchange>& exchange,
                   std::shared_ptr<TaskSlot> slot, CompletionRequest request);

// Scheduler::Recover with the server's callbacks: unfinished journaled tasks
// resume, ended ones are listed until DELETE; one log line per journal found
// or skipped. A no-op when durable tasks are off.
Status RecoverDurableTasks(const std::shared_ptr<ServerContext>& ctx);

}  // namespace valet
