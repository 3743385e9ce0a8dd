#include "server/api_server.h"

#include <string>
#include <utility>

#include "server/api_router.h"
#include "server/durable_submit.h"
#include "server/http/http_server.h"
#include "server/work_queue.h"

namespace valet {

namespace {

Status CheckOptions(const ServerOptions& o) {
  if (o.port < 0 || o.port > 65535) return InvalidArgument("port must be in 0..65535, got " + std::to_string(o.port));
  if (o.host.empty()) return InvalidArgument("empty host");
  if (o.request_threads < 1) return InvalidArgument("request_threads must be at least 1");
  if (o.listen_backlog < 1 || o.max_connections < 1) {
    return InvalidArgument("listen_backlog and max_connections must be positive");
  }
  if (o.max_body_bytes == 0) return InvalidArgument("max_body_bytes must be positive");
  for (int limit : o.max_tasks_per_tier) {
    if (limit < 1) return InvalidArgument("every tier's task limit must be at least 1");
  }
  VALET_RETURN_IF_ERROR(CheckCompletionDefaults(o.defaults));
  if (!o.durable.dir.empty() && o.durable.model_fingerprint.empty()) {
    return InvalidArgument("durable tasks need the model fingerprint with their directory");
  }
  if (o.durable.max_tasks < 1) return InvalidArgument("durable.max_tasks must be at least 1");
  if (o.header_timeout.count() <= 0 || o.read_timeout.count() <= 0 || o.idle_timeout.count() <= 0 ||
      o.write_timeout.count() <= 0) {
    return InvalidArgument("header, read, idle and write timeouts must be positive");
  }
  return Status::Ok();
}

http::HttpServerOptions TransportOptions(const ServerOptions& o) {
  http::HttpServerOptions h;
  h.host = o.host;
  h.port = o.port;
  h.listen_backlog = o.listen_backlog;
  h.max_connections = o.max_connections;
  h.limits.max_body_bytes = o.max_body_bytes;
  h.header_timeout = o.header_timeout;
  h.read_timeout = o.read_timeout;
  h.idle_timeout = o.idle_timeout;
  h.write_timeout = o.write_timeout;
  return h;
}

}  // namespace

Result<std::unique_ptr<ApiServer>> ApiServer::Create(Scheduler& scheduler, const EngineInterface& vocab,
                                                     ServerOptions options) {
  VALET_RETURN_IF_ERROR(CheckOptions(options));
  std::unique_ptr<const DurableStore> durable;
  if (!options.durable.dir.empty()) {
    VALET_ASSIGN_OR_RETURN(durable, DurableStore::Open(vocab, options.durable));
  }
  auto ctx = std::make_shared<ServerContext>(scheduler, vocab, std::move(options), std::move(durable));
  return std::unique_ptr<ApiServer>(new ApiServer(std::move(ctx)));
}

ApiServer::ApiServer(std::shared_ptr<ServerContext> ctx)
    : ctx_(std::move(ctx)),
      control_(std::make_unique<WorkQueue>(1)),
      requests_(std::make_unique<WorkQueue>(ctx_->options.request_threads)),
      router_(std::make_unique<ApiRouter>(ctx_, *control_, *requests_)) {}

ApiServer::~ApiServer() { Stop(); }

Status ApiServer::Start() {
  if (http_) return InvalidArgument("the server is already running");
  // Before the first request: a client asking for a task of the last run
  // finds it, and no new task can take a recovered one's key.
  if (!recovered_) {
    VALET_RETURN_IF_ERROR(RecoverDurableTasks(ctx_));
    recovered_ = true;
  }
  VALET_ASSIGN_OR_RETURN(http_, http::HttpServer::Listen(TransportOptions(ctx_->options), *router_));
  port_ = http_->port();
  http_->Start();
  return Status::Ok();
}

void ApiServer::Stop() {
  if (ctx_->stopping.exchange(true)) return;
  // From here requests are answered 503, queued ones too; once the workers
  // are joined nothing submits any more, so the cancellations below reach
  // every task this server started. Only then does the listening socket
  // close, so a client that can no longer connect knows they were made.
  requests_->Stop();
  control_->Stop();
  // Durable tasks are left running: a cancel would forget them, and the
  // scheduler's Stop keeps their journals for the next start.
  for (const TaskEntry& e : ctx_->tasks.Entries()) {
    if (!IsTerminal(e.state) && !ctx_->durable_tasks.IsDurable(e.id)) (void)ctx_->scheduler.Cancel(e.id).ok();
  }
  if (http_) http_->Stop(ctx_->options.stop_grace);
}

}  // namespace valet
