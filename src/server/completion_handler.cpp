#include "server/completion_handler.h"

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "sched/tool_use.h"
#include "server/durable_submit.h"
#include "server/http_reply.h"
#include "server/openai_response.h"
#include "server/tool_call_stream.h"
#include "server/utf8_assembler.h"

namespace valet {

namespace {

ApiError Cancelled() {
  ApiError e;
  e.http_status = 503;
  e.type = "server_error";
  e.message = "the task was cancelled (the client left or the server is stopping)";
  e.code = "cancelled";
  return e;
}

ApiError Stopping() {
  ApiError e = Cancelled();
  e.message = "the server is stopping";
  e.code = "server_stopping";
  return e;
}

ApiError ErrorFromResult(const TaskResult& result) {
  return result.state == TaskState::kFailed ? ErrorFromStatus(result.status) : Cancelled();
}

// One accepted request's reply, written by its task's callbacks. The
// scheduler runs a task's callbacks one at a time, so the state needs no lock.
class CompletionReply {
 public:
  CompletionReply(std::shared_ptr<ServerContext> ctx, std::shared_ptr<http::HttpExchange> exchange,
                  std::shared_ptr<TaskSlot> slot, const CompletionRequest& request)
      : ctx_(std::move(ctx)),
        exchange_(std::move(exchange)),
        slot_(std::move(slot)),
        endpoint_(request.endpoint),
        stream_(request.stream),
        include_usage_(request.include_usage),
        logprobs_(request.logprobs) {
    const TaskRequest& task = request.task;
    if (stream_ && !task.tools.empty() && task.tool_choice.kind != ToolChoice::Kind::kNone) {
      calls_stream_.emplace(AnswerSyntax(ctx_->tool_syntax, task.tool_choice));
    }
  }

  // Before the token's OnToken.
  void OnLogprobs(const TokenLogprobs& logprobs) {
    if (stream_) pending_logprobs_.push_back(logprobs);
  }

  void OnState(TaskId id, TaskState state) { ctx_->tasks.SetState(*slot_, id, state); }

  void OnToken(TaskId id, std::string_view text) {
    ctx_->tasks.AddToken(*slot_, id);
    if (!stream_) return;
    Start(id);
    Emit(Showable(utf8_.Push(text)));
  }

  void OnDone(TaskId id, const TaskResult& result) {
    ctx_->tasks.SetState(*slot_, id, result.state);
    ctx_->metrics.ObserveFinished(result);
    const bool ok = result.state == TaskState::kDone;
    if (!started_ && !ok) return exchange_->Reply(ErrorReply(*ctx_, ErrorFromResult(result)));
    if (!stream_) return exchange_->Reply(JsonReply(200, CompletionBody(Meta(id), result)));
    Start(id);
    Emit(Showable(utf8_.Flush()));
    const bool calls = !result.tool_calls.empty();
    if (calls_stream_) {
      // What was held back: the rest of the content before the calls, or all of it.
      const std::string& held = calls ? result.content : calls_stream_->text();
      if (held.size() > calls_stream_->shown()) Emit(held.substr(calls_stream_->shown()));
    }
    if (calls) {
      ChunkOptions o;
      o.usage_null = include_usage_;
      exchange_->Write(ToolCallsChunk(meta_, result.tool_calls, o));
    }
    exchange_->Write(StreamEnd(result, calls));
    exchange_->EndStream();
  }

 private:
  const ResponseMeta& Meta(TaskId id) {
    if (meta_.id.empty()) {
      meta_ = MakeResponseMeta(endpoint_, id, ctx_->options.model_name);
      meta_.logprobs = logprobs_;
    }
    return meta_;
  }

  // The stream's head, and for a chat the first chunk carrying the role.
  void Start(TaskId id) {
    if (started_) return;
    started_ = true;
    Meta(id);
    // The probe is an SSE comment: every event-stream reader skips it.
    exchange_->BeginStream(200, "text/event-stream", {{"Cache-Control", "no-cache"}}, std::string(kStreamProbe));
    if (endpoint_ == Endpoint::kChatCompletions) EmitChunk("", /*first=*/true);
  }

  // Streamed text that may be shown: all of it, unless it may become a tool call.
  std::string Showable(std::string text) { return calls_stream_ ? calls_stream_->Push(text) : text; }

  // A chunk for new text, or for tokens whose text is still held back
  // (an unfinished UTF-8 character) when their log-probabilities are due.
  void Emit(const std::string& text) {
    if (!text.empty() || !pending_logprobs_.empty()) EmitChunk(text, /*first=*/false);
  }

  void EmitChunk(std::string_view text, bool first) {
    ChunkOptions o;
    o.first = first;
    o.usage_null = include_usage_;
    if (!first) {
      o.logprobs = pending_logprobs_;
      o.text_offset = logprob_bytes_;
    }
    exchange_->Write(StreamChunk(meta_, text, o));
    if (first) return;
    for (const TokenLogprobs& t : pending_logprobs_) logprob_bytes_ += t.sampled.piece.size();
    pending_logprobs_.clear();
  }

  // The events that end a stream: the last chunk and usage, or the error; [DONE].
  std::string StreamEnd(const TaskResult& result, bool tool_calls) const {
    std::string out;
    if (result.state != TaskState::kDone) {
      out += StreamError(ErrorFromResult(result).ToJson());
    } else {
      ChunkOptions o;
      o.finish_reason = tool_calls ? "tool_calls" : FinishReason(result.stop_reason);
      o.usage_null = include_usage_;
      out += StreamChunk(meta_, "", o);
      if (include_usage_) out += UsageChunk(meta_, result.metrics);
    }
    out += kStreamDone;
    return out;
  }

  const std::shared_ptr<ServerContext> ctx_;
  const std::shared_ptr<http::HttpExchange> exchange_;
  const std::shared_ptr<TaskSlot> slot_;
  const Endpoint endpoint_;
  const bool stream_;
  const bool include_usage_;
  const bool logprobs_;
  ResponseMeta meta_;
  std::vector<TokenLogprobs> pending_logprobs_;  // streams: of the tokens not yet sent
  size_t logprob_bytes_ = 0;                     // of the tokens sent (completions' text_offset)
  Utf8Assembler utf8_;
  bool started_ = false;
  std::optional<ToolCallStream> calls_stream_;  // a stream whose answer may call tools
};

TaskCallbacks MakeCallbacks(const std::shared_ptr<CompletionReply>& reply) {
  TaskCallbacks cb;
  cb.on_token = [reply](TaskId id, int32_t, std::string_view text) { reply->OnToken(id, text); };
  cb.on_logprobs = [reply](TaskId, const TokenLogprobs& logprobs) { reply->OnLogprobs(logprobs); };
  cb.on_state = [reply](TaskId id, TaskState state) { reply->OnState(id, state); };
  cb.on_done = [reply](TaskId id, const TaskResult& result) { reply->OnDone(id, result); };
  return cb;
}

ApiError QueueFull(Tier tier, int limit) {
  ApiError e;
  e.http_status = 429;
  e.type = "rate_limit_error";
  e.code = "queue_full";
  e.message = std::string("tier ") + TierApiName(tier) + " already has " + std::to_string(limit) +
              " unfinished tasks; retry later";
  return e;
}

// Submits unless the tier is at its task limit (429) or the client has left.
void Submit(const std::shared_ptr<ServerContext>& ctx, const std::shared_ptr<http::HttpExchange>& exchange,
            CompletionRequest request) {
  if (exchange->client_gone()) return;
  if (ctx->stopping.load()) return exchange->Reply(ErrorReply(*ctx, Stopping()));
  const Tier tier = request.task.tier;
  const int limit = ctx->options.max_tasks_per_tier[static_cast<size_t>(tier)];
  std::shared_ptr<TaskSlot> slot = ctx->tasks.Reserve(tier, limit, EndpointName(request.endpoint));
  if (slot == nullptr) {
    http::HttpResponse reply = ErrorReply(*ctx, QueueFull(tier, limit));
    reply.headers.emplace_back("Retry-After", std::to_string(ctx->options.retry_after_seconds));
    return exchange->Reply(std::move(reply));
  }
  if (request.task.durable) return SubmitDurable(ctx, exchange, std::move(slot), std::move(request));
  request.task.callbacks = MakeCallbacks(std::make_shared<CompletionReply>(ctx, exchange, slot, request));
  Result<TaskId> id = ctx->scheduler.Submit(std::move(request.task));
  if (!id.ok()) {
    ctx->tasks.Release(*slot);
    return exchange->Reply(ErrorReply(*ctx, ErrorFromStatus(id.status())));
  }
  ctx->tasks.Record(*slot, *id);
  // The app (here: the server on behalf of its client) cancels; the scheduler never does.
  exchange->OnClientGone([ctx, task = *id] {
    (void)ctx->scheduler.Cancel(task).ok();  // it may have finished meanwhile
    if (!ctx->stopping.load()) ctx->metrics.CountDisconnect();
  });
}

}  // namespace

void HandleCompletion(const std::shared_ptr<ServerContext>& ctx, Endpoint endpoint,
                      const std::shared_ptr<http::HttpExchange>& exchange, WorkQueue& workers) {
  const http::HttpRequest& req = exchange->request();
  ParsedCompletion parsed = ParseCompletionRequest(endpoint, req.body, req.Header("x-valet-tier"), ctx->options.defaults);
  if (const ApiError* e = std::get_if<ApiError>(&parsed)) return exchange->Reply(ErrorReply(*ctx, *e));
  if (auto e = CheckDurableRequest(*ctx, std::get<CompletionRequest>(parsed))) return exchange->Reply(ErrorReply(*ctx, *e));
  auto request = std::make_shared<CompletionRequest>(std::move(std::get<CompletionRequest>(parsed)));
  const int priority = 1 + static_cast<int>(request->task.tier);  // after every parse (priority 0)
  if (!workers.Post(priority, [ctx, exchange, request] { Submit(ctx, exchange, std::move(*request)); })) {
    exchange->Reply(ErrorReply(*ctx, Stopping()));
  }
}

}  // namespace valet
