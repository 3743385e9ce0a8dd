#include "server/api_server.h"

#include <httplib.h>

#include <csignal>
#include <exception>
#include <string>
#include <utility>

#include "server/completion_handler.h"
#include "server/http_reply.h"
#include "server/status_handlers.h"

namespace valet {

namespace {

// Compares without an early exit, so the time taken does not reveal how much
// of a guessed key was right.
bool SameKey(const std::string& given, const std::string& key) {
  unsigned diff = given.size() == key.size() ? 0u : 1u;
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i % key.size()]);
  return diff == 0;
}

bool NeedsKey(const std::string& path) {
  return path.rfind("/v1/", 0) == 0 || path == "/metrics" || path == "/tokenize";
}

// The error body for statuses httplib sets itself (404, 413, 400 on a bad request line).
ApiError DefaultError(const httplib::Request& req, int status) {
  ApiError e;
  e.http_status = status;
  switch (status) {
    case 404: e.message = "no route for " + req.method + " " + req.path; e.code = "not_found"; break;
    case 405: e.message = "method not allowed"; break;
    case 413: e.message = "the request body is too large"; e.code = "body_too_large"; break;
    default: e.message = "HTTP error " + std::to_string(status); break;
  }
  if (status >= 500) e.type = "server_error";
  return e;
}

Status CheckOptions(const ServerOptions& o) {
  if (o.port < 0 || o.port > 65535) return InvalidArgument("port must be in 0..65535, got " + std::to_string(o.port));
  if (o.host.empty()) return InvalidArgument("empty host");
  if (o.http_threads < 1) return InvalidArgument("http_threads must be at least 1");
  if (o.max_body_bytes == 0) return InvalidArgument("max_body_bytes must be positive");
  for (int limit : o.max_tasks_per_tier) {
    if (limit < 1) return InvalidArgument("every tier's task limit must be at least 1");
  }
  VALET_RETURN_IF_ERROR(CheckCompletionDefaults(o.defaults));
  if (o.probe_interval.count() <= 0) return InvalidArgument("probe_interval must be positive");
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<ApiServer>> ApiServer::Create(Scheduler& scheduler, const EngineInterface& vocab,
                                                     ServerOptions options) {
  VALET_RETURN_IF_ERROR(CheckOptions(options));
  auto ctx = std::make_shared<ServerContext>(scheduler, vocab, std::move(options));
  std::unique_ptr<ApiServer> server(new ApiServer(std::move(ctx)));
  server->Route();
  return server;
}

ApiServer::ApiServer(std::shared_ptr<ServerContext> ctx)
    : ctx_(std::move(ctx)), http_(std::make_unique<httplib::Server>()) {}

ApiServer::~ApiServer() { Stop(); }

void ApiServer::Route() {
  ServerContext& ctx = *ctx_;
  std::shared_ptr<ServerContext> shared = ctx_;
  const int threads = ctx.options.http_threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http_->set_payload_max_length(ctx.options.max_body_bytes);
  http_->set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
    if (ctx.options.api_key.empty() || !NeedsKey(req.path)) return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.rfind(prefix, 0) == 0 && SameKey(auth.substr(prefix.size()), ctx.options.api_key)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    ApiError e;
    e.http_status = 401;
    e.message = "missing or wrong API key (Authorization: Bearer <key>)";
    e.code = "invalid_api_key";
    SendError(ctx, res, e);
    return httplib::Server::HandlerResponse::Handled;
  });
  http_->set_error_handler(httplib::Server::HandlerWithResponse(
      [&ctx](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty() || res.is_chunked_content_provider_) return httplib::Server::HandlerResponse::Unhandled;
        SendError(ctx, res, DefaultError(req, res.status));
        return httplib::Server::HandlerResponse::Handled;
      }));
  http_->set_exception_handler([&ctx](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    ApiError e;
    e.http_status = 500;
    e.type = "server_error";
    e.message = "internal error";
    SendError(ctx, res, e);
  });
  http_->Post("/v1/chat/completions", [shared](const httplib::Request& req, httplib::Response& res) {
    HandleCompletion(shared, Endpoint::kChatCompletions, req, res);
  });
  http_->Post("/v1/completions", [shared](const httplib::Request& req, httplib::Response& res) {
    HandleCompletion(shared, Endpoint::kCompletions, req, res);
  });
  http_->Post("/v1/lifecycle",
              [&ctx](const httplib::Request& req, httplib::Response& res) { HandleLifecycle(ctx, req, res); });
  http_->Get("/v1/tasks", [&ctx](const httplib::Request&, httplib::Response& res) { HandleTasks(ctx, res); });
  http_->Get("/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) { HandleModels(ctx, res); });
  http_->Get("/health", [&ctx](const httplib::Request&, httplib::Response& res) { HandleHealth(ctx, res); });
  http_->Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) { HandleMetrics(ctx, res); });
  http_->Post("/tokenize",
              [&ctx](const httplib::Request& req, httplib::Response& res) { HandleTokenize(ctx, req, res); });
}

Status ApiServer::Start() {
  if (thread_.joinable()) return InvalidArgument("the server is already running");
  std::signal(SIGPIPE, SIG_IGN);
  const ServerOptions& o = ctx_->options;
  if (o.port == 0) {
    port_ = http_->bind_to_any_port(o.host);
  } else {
    port_ = http_->bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (port_ < 0) return IoError("cannot listen on " + o.host + ":" + std::to_string(o.port));
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  return Status::Ok();
}

void ApiServer::Stop() {
  ctx_->stopping.store(true);
  http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace valet
