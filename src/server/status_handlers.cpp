#include "server/status_handlers.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/http_reply.h"

namespace valet {

namespace {

using nlohmann::json;

constexpr LifecycleEvent kEvents[] = {LifecycleEvent::kOnCreate, LifecycleEvent::kOnStart, LifecycleEvent::kOnResume,
                                      LifecycleEvent::kOnPause,  LifecycleEvent::kOnStop,  LifecycleEvent::kOnDestroy};

std::optional<LifecycleEvent> EventFromName(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
  for (LifecycleEvent e : kEvents) {
    if (name == LifecycleEventName(e)) return e;
  }
  return std::nullopt;
}

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
  const json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  auto event = body.is_object() ? body.find("event") : body.end();
  const bool named = body.is_object() && event != body.end() && event->is_string();
  std::optional<LifecycleEvent> e = named ? EventFromName(event->get<std::string>()) : std::nullopt;
  if (!e) {
    return ErrorReply(ctx,
                     BadRequest("expected {\"event\": one of ON_CREATE, ON_START, ON_RESUME, ON_PAUSE, ON_STOP, "
                                "ON_DESTROY}",
                                "event", "invalid_value"));
  }
  if (Status s = ctx.scheduler.OnLifecycleEvent(*e); !s.ok()) {
    const char* state = LifecycleStateName(ctx.scheduler.lifecycle_state());
    ApiError error = BadRequest(s.message(), "event", "invalid_lifecycle_transition");
    error.http_status = 409;
    ctx.metrics.CountHttpError(409);
    json reply = error.Body();
    reply["state"] = state;
    return JsonReply(409, Dump(reply));
  }
  return JsonReply(200,
           Dump({{"event", LifecycleEventName(*e)}, {"state", LifecycleStateName(ctx.scheduler.lifecycle_state())}}));
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
  const TaskState states[] = {TaskState::kQueued, TaskState::kPrefilling, TaskState::kParked, TaskState::kDecoding};
  for (size_t i = 0; i < std::size(states); ++i) in.unfinished_by_state[i] = ctx.tasks.CountByTier(states[i]);
  http::HttpResponse r = JsonReply(200, ctx.metrics.Render(in));
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  return r;
}

http::HttpResponse HandleTokenize(ServerContext& ctx, const http::HttpRequest& req) {
  const json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  auto content = body.is_object() ? body.find("content") : body.end();
  if (!body.is_object() || content == body.end() || !content->is_string()) {
    return ErrorReply(ctx, BadRequest("expected {\"content\": string, \"add_special\": boolean}", "content",
                                          "invalid_type"));
  }
  auto add_special = body.find("add_special");
  if (add_special != body.end() && !add_special->is_boolean()) {
    return ErrorReply(ctx, BadRequest("'add_special' must be a boolean", "add_special", "invalid_type"));
  }
  const bool bos = add_special != body.end() && add_special->get<bool>();
  return JsonReply(200, Dump({{"tokens", ctx.vocab.Tokenize(content->get_ref<const std::string&>(), bos)}}));
}

}  // namespace valet
