// POST /v1/chat/completions and /v1/completions: parse, submit to the
// scheduler, then answer with one JSON body or a server-sent event stream.
//
// Parsing runs on a request worker; submission (which renders the chat
// template and tokenizes) runs on a worker too, queued by the request's tier
// so a chat is submitted ahead of a burst of background work. After that no
// thread waits for the task: its callbacks on the inference thread write the
// reply through the exchange. The reply's status is only chosen once the
// task has produced its first token or ended, so a task that fails before
// its first token still gets a plain error reply, streamed or not. A client
// that leaves has its task cancelled.
#pragma once

#include <memory>

#include "server/completion_request.h"
#include "server/http/http_exchange.h"
#include "server/server_context.h"
#include "server/work_queue.h"

namespace valet {

// The request worker's part; `workers` takes the submission stage.
void HandleCompletion(const std::shared_ptr<ServerContext>& ctx, Endpoint endpoint,
                      const std::shared_ptr<http::HttpExchange>& exchange, WorkQueue& workers);

}  // namespace valet
