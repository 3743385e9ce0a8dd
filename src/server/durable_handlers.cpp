#include "server/durable_handlers.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "server/http_reply.h"
#include "server/openai_response.h"

namespace valet {

namespace {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

http::HttpResponse NotFoundReply(ServerContext& ctx, const std::string& key) {
  ApiError e = ApiErrorOf(404, "no durable task '" + key + "' (never submitted, or deleted)", "task_not_found");
  e.param = "id";
  return ErrorReply(ctx, e);
}

http::HttpResponse JournalError(ServerContext& ctx, const std::string& key, const Status& status) {
  const std::string what = "the journal of durable task '" + key + "' cannot be read: " + status.ToString();
  return ErrorReply(ctx, ApiErrorOf(500, what, "journal_unreadable"));
}

// Its state, and why it waits when it is parked ("journal_io": its journal
// cannot be written, so it may not end yet).
json Head(const ServerContext& ctx, const DurableEntry& e) {
  json head = {{"id", e.key}, {"object", "valet.task"}, {"state", TaskStateName(e.state)}};
  if (e.id == 0 || IsTerminal(e.state)) return head;
  const Result<TaskInfo> info = ctx.scheduler.Info(e.id);
  if (info.ok() && info->state == TaskState::kParked) {
    head["state"] = TaskStateName(TaskState::kParked);
    head["reason"] = ParkCauseName(info->park_cause);
  }
  return head;
}

// What a task generated so far: kept here while it runs, in its journal once it ended.
struct Output {
  std::vector<int32_t> tokens;
  std::string text;
};

Result<Output> OutputOf(const ServerContext& ctx, const DurableEntry& e) {
  Output out;
  if (!IsTerminal(e.state)) {
    out.tokens = e.tokens;
    out.text = ctx.durable->Text(e.stop, out.tokens, /*ended=*/false);
    return out;
  }
  VALET_ASSIGN_OR_RETURN(JournalContents c, ctx.durable->Read(e.key));
  out.tokens = std::move(c.tokens);
  out.text = ctx.durable->Text(c.request.stop, out.tokens, /*ended=*/e.state == TaskState::kDone);
  return out;
}

Result<int32_t> PromptTokens(ServerContext& ctx, const DurableEntry& e, const TaskRequest& request) {
  if (e.prompt_tokens >= 0) return e.prompt_tokens;
  VALET_ASSIGN_OR_RETURN(int32_t count, ctx.durable->CountPromptTokens(request));
  ctx.durable_tasks.SetPromptTokens(e.key, count);
  return count;
}

// The completion object the same request answers without "durable".
http::HttpResponse DoneReply(ServerContext& ctx, const DurableEntry& e) {
  Result<JournalContents> c = ctx.durable->Read(e.key);
  if (!c.ok()) return JournalError(ctx, e.key, c.status());
  Result<int32_t> prompt = PromptTokens(ctx, e, c->request);
  if (!prompt.ok()) return JournalError(ctx, e.key, prompt.status());
  TaskResult result;
  result.stop_reason = c->end ? c->end->stop_reason : e.stop_reason;
  result.text = ctx.durable->Text(c->request.stop, c->tokens, /*ended=*/true);
  result.metrics.prompt_tokens = *prompt;
  result.metrics.cached_prompt_tokens = e.cached_prompt_tokens;
  result.metrics.generated_tokens = static_cast<int32_t>(c->tokens.size());
  ResponseMeta meta;
  meta.endpoint = EndpointOf(c->request);
  meta.id = (meta.endpoint == Endpoint::kChatCompletions ? "chatcmpl-" : "cmpl-") + e.key;
  meta.model = ctx.options.model_name;
  meta.created = ctx.durable->WrittenAt(e.key);
  return JsonReply(200, CompletionBody(meta, result));
}

http::HttpResponse EndedReply(ServerContext& ctx, const DurableEntry& e) {
  if (e.state == TaskState::kDone) return DoneReply(ctx, e);
  if (e.state == TaskState::kFailed) {
    return ErrorReply(ctx, ApiErrorOf(500, "the task failed: " + e.error, "task_failed"));
  }
  return ErrorReply(
      ctx, ApiErrorOf(503, "the task was cancelled by the server stopping; it resumes at its next start", "cancelled"));
}

http::HttpResponse Deleted(const std::string& key) {
  return JsonReply(200, Dump({{"id", key}, {"object", "valet.task"}, {"deleted", true}}));
}

}  // namespace

http::HttpResponse HandleTaskStatus(ServerContext& ctx, const TaskPath& path) {
  const std::optional<DurableEntry> e = ctx.durable ? ctx.durable_tasks.Find(path.id) : std::nullopt;
  if (!e) return NotFoundReply(ctx, path.id);
  Result<Output> out = OutputOf(ctx, *e);
  if (!out.ok()) return JournalError(ctx, e->key, out.status());
  json body = Head(ctx, *e);
  body["tier"] = TierApiName(e->tier);
  body["endpoint"] = EndpointName(e->endpoint);
  body["completion_tokens"] = out->tokens.size();
  body["tokens"] = std::move(out->tokens);
  body["text"] = std::move(out->text);
  body["finish_reason"] = e->state == TaskState::kDone ? json(FinishReason(e->stop_reason)) : json(nullptr);
  body["error"] = e->error.empty() ? json(nullptr) : json(e->error);
  return JsonReply(200, Dump(body));
}

http::HttpResponse HandleTaskResult(ServerContext& ctx, const TaskPath& path) {
  const std::optional<DurableEntry> e = ctx.durable ? ctx.durable_tasks.Find(path.id) : std::nullopt;
  if (!e) return NotFoundReply(ctx, path.id);
  if (IsTerminal(e->state)) return EndedReply(ctx, *e);
  json head = Head(ctx, *e);
  // The client asking again is the retry a task waiting for its journal waits for.
  if (head.value("reason", "") == ParkCauseName(ParkCause::kJournalIo)) (void)ctx.scheduler.RetryJournals().ok();
  http::HttpResponse reply = JsonReply(202, Dump(head));
  reply.headers.emplace_back("Retry-After", std::to_string(ctx.options.retry_after_seconds));
  return reply;
}

http::HttpResponse HandleTaskDelete(ServerContext& ctx, const TaskPath& path) {
  const std::optional<DurableEntry> e = ctx.durable ? ctx.durable_tasks.BeginDelete(path.id) : std::nullopt;
  if (!e) return NotFoundReply(ctx, path.id);
  if (!IsTerminal(e->state)) {
    if (e->id == 0) {
      ctx.durable_tasks.CancelDelete(e->key);
      return ErrorReply(ctx, ApiErrorOf(409, "the task is still being submitted; retry", "task_submitting"));
    }
    // Its end (the journal removed) reaches the table through on_done.
    if (ctx.scheduler.Cancel(e->id).ok()) return Deleted(e->key);
    // It ended meanwhile: acknowledged below instead.
  }
  const Status acked = ctx.scheduler.Ack(e->key);
  if (!acked.ok() && acked.code() != StatusCode::kNotFound) {
    ctx.durable_tasks.CancelDelete(e->key);
    return ErrorReply(ctx, ErrorFromStatus(acked).http_status == 400
                               ? ApiErrorOf(409, acked.message(), "task_busy")
                               : ApiErrorOf(500, acked.ToString(), "internal_error"));
  }
  ctx.durable_tasks.Erase(e->key);
  return Deleted(e->key);
}

}  // namespace valet
