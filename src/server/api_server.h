// valet's OpenAI-compatible HTTP server, in front of a running Scheduler. It
// is built from the scheduler and the engine's tokenizer, not from a model
// path, so tests run it over the deterministic fake engine.
//
// Endpoints (docs/server.md): POST /v1/chat/completions, POST /v1/completions,
// POST /v1/lifecycle, GET /v1/tasks, GET /v1/models, GET /health, GET /metrics,
// POST /tokenize, and for durable tasks GET /v1/tasks/{id}, GET
// /v1/tasks/{id}/result and DELETE /v1/tasks/{id} (docs/durable.md).
//
// Threads: the HTTP event loop (every socket), one control thread (the small
// endpoints, so they answer whatever the load), ServerOptions::request_threads
// request workers (parse, render, tokenize, submit; most urgent tier first),
// and the scheduler's inference thread, whose callbacks write the replies.
#pragma once

#include <memory>

#include "engine/engine_interface.h"
#include "server/server_context.h"
#include "valet/scheduler.h"
#include "valet/status.h"

namespace valet {

namespace http {
class HttpServer;
}
class ApiRouter;
class WorkQueue;

class ApiServer {
 public:
  // InvalidArgument for unusable options. `scheduler` and `vocab` must
  // outlive the server; `vocab` is only used for const tokenizer calls.
  static Result<std::unique_ptr<ApiServer>> Create(Scheduler& scheduler, const EngineInterface& vocab,
                                                   ServerOptions options);
  ~ApiServer();  // Stop()
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // With ServerOptions::durable.dir, first recovers the durable tasks a
  // previous run left (Scheduler::Recover; an error if the scheduler has no
  // durable_dir). Then binds (port 0: any free port) and serves on
  // background threads.
  Status Start();
  int port() const { return port_; }
  // Stops accepting, answers what is queued with 503, cancels the server's
  // unfinished tasks (their streams end with an error event and [DONE]),
  // waits up to stop_grace for those last events to be written, and joins.
  void Stop();

 private:
  explicit ApiServer(std::shared_ptr<ServerContext> ctx);

  std::shared_ptr<ServerContext> ctx_;
  std::unique_ptr<WorkQueue> control_;
  std::unique_ptr<WorkQueue> requests_;
  std::unique_ptr<ApiRouter> router_;
  std::unique_ptr<http::HttpServer> http_;
  int port_ = -1;
  bool recovered_ = false;
};

}  // namespace valet
