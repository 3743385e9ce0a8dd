// valet's OpenAI-compatible HTTP server (cpp-httplib), in front of a running
// Scheduler. It is built from the scheduler and the engine's tokenizer, not
// from a model path, so tests run it over the deterministic fake engine.
//
// Endpoints (docs/server.md): POST /v1/chat/completions, POST /v1/completions,
// POST /v1/lifecycle, GET /v1/tasks, GET /v1/models, GET /health, GET /metrics,
// POST /tokenize.
#pragma once

#include <memory>
#include <thread>

#include "engine/engine_interface.h"
#include "server/server_context.h"
#include "valet/scheduler.h"
#include "valet/status.h"

namespace httplib {
class Server;
}

namespace valet {

class ApiServer {
 public:
  // InvalidArgument for unusable options. `scheduler` and `vocab` must
  // outlive the server; `vocab` is only used for const tokenizer calls.
  static Result<std::unique_ptr<ApiServer>> Create(Scheduler& scheduler, const EngineInterface& vocab,
                                                   ServerOptions options);
  ~ApiServer();  // Stop()
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Binds (port 0: any free port) and serves on a background thread. Ignores
  // SIGPIPE process-wide: a client that disconnects must not kill the server.
  Status Start();
  int port() const { return port_; }
  // Stops accepting, cancels the tasks of requests still waiting, joins.
  void Stop();

 private:
  explicit ApiServer(std::shared_ptr<ServerContext> ctx);
  void Route();

  std::shared_ptr<ServerContext> ctx_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = -1;
};

}  // namespace valet
