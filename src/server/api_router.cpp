#include "server/api_router.h"

#include <string>
#include <string_view>
#include <variant>

#include "server/client_text.h"
#include "server/completion_handler.h"
#include "server/durable_handlers.h"
#include "server/http_reply.h"
#include "server/status_handlers.h"

namespace valet {

namespace {

enum class RouteId { kChat, kCompletions, kLifecycle, kPower, kTasks, kModels, kHealth, kMetrics, kTokenize };

struct Route {
  const char* method;
  const char* path;
  RouteId id;
};

constexpr Route kRoutes[] = {
    {"POST", "/v1/chat/completions", RouteId::kChat}, {"POST", "/v1/completions", RouteId::kCompletions},
    {"POST", "/v1/lifecycle", RouteId::kLifecycle},   {"POST", "/v1/power", RouteId::kPower},
    {"GET", "/v1/tasks", RouteId::kTasks},
    {"GET", "/v1/models", RouteId::kModels},          {"GET", "/health", RouteId::kHealth},
    {"GET", "/metrics", RouteId::kMetrics},           {"POST", "/tokenize", RouteId::kTokenize},
};

// Compares without an early exit, so the time taken does not reveal how much
// of a guessed key was right.
bool SameKey(std::string_view given, const std::string& key) {
  unsigned diff = given.size() == key.size() ? 0u : 1u;
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i % key.size()]);
  return diff == 0;
}

bool NeedsKey(const std::string& path) {
  return path.rfind("/v1/", 0) == 0 || path == "/metrics" || path == "/tokenize";
}

// The replies that are one function call (all but the completions).
http::HttpResponse Answer(ServerContext& ctx, RouteId id, const http::HttpRequest& req) {
  switch (id) {
    case RouteId::kLifecycle: return HandleLifecycle(ctx, req);
    case RouteId::kPower: return HandlePower(ctx, req);
    case RouteId::kTasks: return HandleTasks(ctx);
    case RouteId::kModels: return HandleModels(ctx);
    case RouteId::kHealth: return HandleHealth(ctx);
    case RouteId::kMetrics: return HandleMetrics(ctx);
    case RouteId::kTokenize: return HandleTokenize(ctx, req);
    case RouteId::kChat:
    case RouteId::kCompletions: break;
  }
  return ErrorReply(ctx, ApiErrorOf(500, "no handler", "internal_error"));
}

// /v1/tasks/{id} (GET, DELETE) and /v1/tasks/{id}/result (GET). Reading a
// journal is file I/O of up to a whole task: a request worker's job, queued
// behind every completion's submission, like /tokenize.
void RouteTask(const std::shared_ptr<ServerContext>& ctx, WorkQueue& workers,
               const std::shared_ptr<http::HttpExchange>& exchange, const std::variant<TaskPath, ApiError>& parsed) {
  const http::HttpRequest& req = exchange->request();
  if (const ApiError* e = std::get_if<ApiError>(&parsed)) return exchange->Reply(ErrorReply(*ctx, *e));
  const TaskPath path = std::get<TaskPath>(parsed);
  const char* allow = path.result ? "GET" : "GET, DELETE";
  const bool get = req.method == "GET";
  if (!get && (path.result || req.method != "DELETE")) {
    http::HttpResponse reply =
        ErrorReply(*ctx, ApiErrorOf(405, std::string("use ") + allow + " for " + QuoteClientText(req.path),
                                    "method_not_allowed"));
    reply.headers.emplace_back("Allow", allow);
    return exchange->Reply(std::move(reply));
  }
  const bool queued = workers.Post(static_cast<int>(kNumTiers), [ctx, exchange, path, get] {
    ServerContext& c = *ctx;
    exchange->Reply(!get          ? HandleTaskDelete(c, path)
                    : path.result ? HandleTaskResult(c, path)
                                  : HandleTaskStatus(c, path));
  });
  if (!queued) exchange->Reply(ErrorReply(*ctx, ApiErrorOf(503, "the server is stopping", "server_stopping")));
}

}  // namespace

bool ApiRouter::Authorized(const http::HttpRequest& req) const {
  const std::string& key = ctx_->options.api_key;
  if (key.empty() || !NeedsKey(req.path)) return true;
  constexpr std::string_view kPrefix = "Bearer ";
  const std::string_view auth = req.Header("authorization");
  return auth.substr(0, kPrefix.size()) == kPrefix && SameKey(auth.substr(kPrefix.size()), key);
}

void ApiRouter::OnRequest(const std::shared_ptr<http::HttpExchange>& exchange) {
  ServerContext& ctx = *ctx_;
  const http::HttpRequest& req = exchange->request();
  if (ctx.stopping.load()) {
    return exchange->Reply(ErrorReply(ctx, ApiErrorOf(503, "the server is stopping", "server_stopping")));
  }
  if (!Authorized(req)) {
    return exchange->Reply(
        ErrorReply(ctx, ApiErrorOf(401, "missing or wrong API key (Authorization: Bearer <key>)", "invalid_api_key")));
  }
  if (auto task = ParseTaskPath(req.path)) return RouteTask(ctx_, requests_, exchange, *task);
  const Route* route = nullptr;
  std::string allow;
  for (const Route& r : kRoutes) {
    if (req.path != r.path) continue;
    allow = r.method;
    if (req.method == r.method) route = &r;
  }
  if (route == nullptr && allow.empty()) {
    return exchange->Reply(
        ErrorReply(ctx, ApiErrorOf(404, "no route for " + QuoteClientText(req.method + " " + req.path), "not_found")));
  }
  if (route == nullptr) {
    http::HttpResponse reply =
        ErrorReply(ctx, ApiErrorOf(405, "use " + allow + " for " + QuoteClientText(req.path), "method_not_allowed"));
    reply.headers.emplace_back("Allow", allow);
    return exchange->Reply(std::move(reply));
  }
  std::shared_ptr<ServerContext> shared = ctx_;
  const RouteId id = route->id;
  bool queued = false;
  if (id == RouteId::kChat || id == RouteId::kCompletions) {
    const Endpoint endpoint = id == RouteId::kChat ? Endpoint::kChatCompletions : Endpoint::kCompletions;
    WorkQueue& workers = requests_;
    // Parsing is bounded by the body limit and comes first, so every request
    // reaches its tier's place in the queue quickly.
    queued = requests_.Post(0, [shared, endpoint, exchange, &workers] {
      HandleCompletion(shared, endpoint, exchange, workers);
    });
  } else if (id == RouteId::kTokenize) {
    // Tokenizing up to a whole body: a request worker's job, queued behind chats.
    queued = requests_.Post(static_cast<int>(kNumTiers),
                            [shared, id, exchange] { exchange->Reply(Answer(*shared, id, exchange->request())); });
  } else {
    queued = control_.Post(0, [shared, id, exchange] { exchange->Reply(Answer(*shared, id, exchange->request())); });
  }
  if (!queued) exchange->Reply(ErrorReply(ctx, ApiErrorOf(503, "the server is stopping", "server_stopping")));
}

http::HttpResponse ApiRouter::TransportErrorReply(const http::HttpError& error) {
  return ErrorReply(*ctx_, ApiErrorOf(error.status, error.message, error.code));
}

}  // namespace valet
