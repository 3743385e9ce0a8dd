// POST /v1/chat/completions and /v1/completions: parse, submit to the
// scheduler, then answer with one JSON body or a server-sent event stream.
//
// The reply's status is only chosen once the task has produced its first
// token or ended, so a request the scheduler rejects late (a prompt longer
// than the context, found after tokenization) still gets its 400, streamed
// or not. While it waits, and while it streams, the request checks that its
// client is connected; a client that leaves has its task cancelled.
#pragma once

#include <httplib.h>

#include <memory>

#include "server/completion_request.h"
#include "server/server_context.h"

namespace valet {

void HandleCompletion(const std::shared_ptr<ServerContext>& ctx, Endpoint endpoint, const httplib::Request& req,
                      httplib::Response& res);

}  // namespace valet
