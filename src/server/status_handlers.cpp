#include "server/status_handlers.h"

#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "server/http_reply.h"
#include "server/status_requests.h"

namespace valet {

namespace {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// The kind of the task's latest park, for a task that is parked now.
json ParkKindOf(const ServerContext& ctx, const TaskEntry& e) {
  if (e.state != TaskState::kParked) return nullptr;
  Result<std::vector<TimelineEvent>> timeline = ctx.scheduler.Timeline(e.id);
  if (!timeline.ok()) return nullptr;
  for (auto it = timeline->rbegin(); it != timeline->rend(); ++it) {
    if (it->kind == TimelineKind::kParked) return ParkKindName(it->park_kind);
  }
  return nullptr;
}

json TaskJson(const ServerContext& ctx, const TaskEntry& e) {
  json t = {{"id", e.id},
            {"tier", TierApiName(e.tier)},
            {"state", TaskStateName(e.state)},
            {"tokens_done", e.tokens},
            {"park_kind", ParkKindOf(ctx, e)},
            {"endpoint", e.endpoint}};
  if (Result<TaskMetrics> m = ctx.scheduler.Metrics(e.id); m.ok()) {
    t["prompt_tokens"] = m->prompt_tokens;
    t["parks"] = m->parks;
  }
  return t;
}

}  // namespace

http::HttpResponse HandleLifecycle(ServerContext& ctx, const http::HttpRequest& req) {
  const std::variant<LifecycleEvent, ApiError> parsed = ParseLifecycleRequest(req.body);
  if (const ApiError* error = std::get_if<ApiError>(&parsed)) return ErrorReply(ctx, *error);
  const LifecycleEvent event = std::get<LifecycleEvent>(parsed);
  if (Status s = ctx.scheduler.OnLifecycleEvent(event); !s.ok()) {
    const char* state = LifecycleStateName(ctx.scheduler.lifecycle_state());
    ApiError error = BadRequest(s.message(), "event", "invalid_lifecycle_transition");
    error.http_status = 409;
    ctx.metrics.CountHttpError(409);
    json reply = error.Body();
    reply["state"] = state;
    return JsonReply(409, Dump(reply));
  }
  return JsonReply(200,
                   Dump({{"event", LifecycleEventName(event)}, {"state", LifecycleStateName(ctx.scheduler.lifecycle_state())}}));
}

http::HttpResponse HandlePower(ServerContext& ctx, const http::HttpRequest& req) {
  const std::variant<PowerUpdate, ApiError> parsed = ParsePowerRequest(req.body);
  if (const ApiError* error = std::get_if<ApiError>(&parsed)) return ErrorReply(ctx, *error);
  std::lock_guard<std::mutex> lock(ctx.power_mu);
  const PowerState next = std::get<PowerUpdate>(parsed).Apply(ctx.power);
  if (Status s = ctx.scheduler.OnPowerState(next); !s.ok()) {
    return ErrorReply(ctx, BadRequest(s.message(), "battery_percent", "invalid_value"));
  }
  ctx.power = next;
  return JsonReply(200, Dump({{"charging", next.charging},
                              {"battery_percent", next.battery_percent},
                              {"power_save", next.power_save},
                              {"battery_low", next.battery_low}}));
}

http::HttpResponse HandleTasks(ServerContext& ctx) {
  json data = json::array();
  for (const TaskEntry& e : ctx.tasks.Entries()) data.push_back(TaskJson(ctx, e));
  return JsonReply(200, Dump({{"object", "list"}, {"data", std::move(data)}}));
}

http::HttpResponse HandleModels(ServerContext& ctx) {
  json model = {{"id", ctx.options.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "valet"},
                {"context_length", ctx.vocab.context_length()}};
  return JsonReply(200, Dump({{"object", "list"}, {"data", json::array({std::move(model)})}}));
}

http::HttpResponse HandleHealth(ServerContext& ctx) {
  return JsonReply(200, Dump({{"status", "ok"}, {"lifecycle", LifecycleStateName(ctx.scheduler.lifecycle_state())}}));
}

http::HttpResponse HandleMetrics(ServerContext& ctx) {
  MetricsInputs in;
  in.stats = ctx.scheduler.Stats();
  in.lifecycle = ctx.scheduler.lifecycle_state();
  {
    std::lock_guard<std::mutex> lock(ctx.power_mu);
    in.power = ctx.power;
  }
  const TaskState states[] = {TaskState::kQueued, TaskState::kPrefilling, TaskState::kParked, TaskState::kDecoding};
  for (size_t i = 0; i < std::size(states); ++i) in.unfinished_by_state[i] = ctx.tasks.CountByTier(states[i]);
  http::HttpResponse r = JsonReply(200, ctx.metrics.Render(in));
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  return r;
}

http::HttpResponse HandleTokenize(ServerContext& ctx, const http::HttpRequest& req) {
  const std::variant<TokenizeRequest, ApiError> parsed = ParseTokenizeRequest(req.body);
  if (const ApiError* error = std::get_if<ApiError>(&parsed)) return ErrorReply(ctx, *error);
  const TokenizeRequest& r = std::get<TokenizeRequest>(parsed);
  return JsonReply(200, Dump({{"tokens", ctx.vocab.Tokenize(r.content, r.add_special)}}));
}

}  // namespace valet
