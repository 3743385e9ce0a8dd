// The server's side of the HTTP transport: checks the API key, finds the
// route and hands the request to the thread that serves it. Runs on the
// event loop, so it never blocks.
#pragma once

#include <memory>

#include "server/http/http_server.h"
#include "server/server_context.h"
#include "server/work_queue.h"

namespace valet {

class ApiRouter final : public http::HttpHandler {
 public:
  // `control` serves the small endpoints, `requests` completions and /tokenize.
  ApiRouter(std::shared_ptr<ServerContext> ctx, WorkQueue& control, WorkQueue& requests)
      : ctx_(std::move(ctx)), control_(control), requests_(requests) {}

  void OnRequest(const std::shared_ptr<http::HttpExchange>& exchange) override;
  http::HttpResponse TransportErrorReply(const http::HttpError& error) override;

 private:
  bool Authorized(const http::HttpRequest& req) const;

  std::shared_ptr<ServerContext> ctx_;
  WorkQueue& control_;
  WorkQueue& requests_;
};

}  // namespace valet
