#include "server/completion_handler.h"

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "server/connection_watch.h"
#include "server/http_reply.h"
#include "server/openai_response.h"
#include "server/task_channel.h"

namespace valet {

namespace {

// One accepted request and everything its reply needs.
struct Job {
  std::shared_ptr<ServerContext> ctx;
  std::shared_ptr<TaskChannel> channel;
  TaskId id = 0;
  ResponseMeta meta;
  bool include_usage = false;
  std::optional<ConnectionWatch> watch;
};

TaskCallbacks MakeCallbacks(const std::shared_ptr<ServerContext>& ctx, const std::shared_ptr<TaskChannel>& channel) {
  TaskCallbacks cb;
  cb.on_token = [ctx, channel](TaskId id, int32_t, std::string_view text) {
    ctx->tasks.AddToken(id);
    channel->OnToken(text);
  };
  cb.on_logprobs = [channel](TaskId, const TokenLogprobs& logprobs) { channel->OnLogprobs(logprobs); };
  cb.on_state = [ctx](TaskId id, TaskState state) { ctx->tasks.SetState(id, state); };
  cb.on_done = [ctx, channel](TaskId id, const TaskResult& result) {
    ctx->tasks.SetState(id, result.state);
    ctx->metrics.ObserveFinished(result);
    channel->OnDone(result);
  };
  return cb;
}

bool ShouldAbandon(const Job& job) {
  return job.ctx->stopping.load(std::memory_order_relaxed) || (job.watch && job.watch->PeerClosed());
}

// The app (here: the server on behalf of its client) cancels; the scheduler never does.
void Abandon(const Job& job) {
  // The task may have finished meanwhile; then there is nothing to cancel.
  (void)job.ctx->scheduler.Cancel(job.id).ok();
  if (!job.ctx->stopping.load(std::memory_order_relaxed)) job.ctx->metrics.CountDisconnect();
}

ApiError Cancelled() {
  ApiError e;
  e.http_status = 503;
  e.type = "server_error";
  e.message = "the task was cancelled (the client left or the server is stopping)";
  e.code = "cancelled";
  return e;
}

ApiError ErrorFromResult(const TaskResult& result) {
  return result.state == TaskState::kFailed ? ErrorFromStatus(result.status) : Cancelled();
}

// Submits the request unless its tier is at its task limit (then 429).
std::optional<Job> Submit(const std::shared_ptr<ServerContext>& ctx, CompletionRequest request,
                          httplib::Response& res) {
  Job job;
  job.ctx = ctx;
  job.channel = std::make_shared<TaskChannel>();
  job.include_usage = request.include_usage;
  const Tier tier = request.task.tier;
  request.task.callbacks = MakeCallbacks(ctx, job.channel);
  Result<TaskId> id = Internal("not submitted");
  const int limit = ctx->options.max_tasks_per_tier[static_cast<size_t>(tier)];
  auto submit = [&] { return ctx->scheduler.Submit(std::move(request.task)); };
  if (!ctx->tasks.SubmitIfRoom(tier, limit, EndpointName(request.endpoint), submit, &id)) {
    ApiError e;
    e.http_status = 429;
    e.type = "rate_limit_error";
    e.code = "queue_full";
    e.message = std::string("tier ") + TierApiName(tier) + " already has " + std::to_string(limit) +
                " unfinished tasks; retry later";
    res.set_header("Retry-After", std::to_string(ctx->options.retry_after_seconds));
    SendError(*ctx, res, e);
    return std::nullopt;
  }
  if (!id.ok()) {
    SendError(*ctx, res, ErrorFromStatus(id.status()));
    return std::nullopt;
  }
  job.id = *id;
  job.meta = MakeResponseMeta(request.endpoint, *id, request.model.empty() ? ctx->options.model_name : request.model);
  job.meta.logprobs = request.logprobs;
  return job;
}

// Waits for the first token or the end; false when the request was abandoned.
bool WaitStarted(const Job& job) {
  while (!job.channel->WaitStarted(job.ctx->options.probe_interval)) {
    if (ShouldAbandon(job)) {
      Abandon(job);
      return false;
    }
  }
  return true;
}

void ReplyWhole(const Job& job, httplib::Response& res) {
  while (!job.channel->Take(job.ctx->options.probe_interval).done) {
    if (ShouldAbandon(job)) {
      Abandon(job);
      return SendError(*job.ctx, res, Cancelled());
    }
  }
  const TaskResult& result = job.channel->result();
  if (result.state != TaskState::kDone) return SendError(*job.ctx, res, ErrorFromResult(result));
  SendJson(res, 200, CompletionBody(job.meta, result));
}

struct Stream {
  Job job;
  bool first = true;
};

// The events for the end of a stream: the last chunk, usage, [DONE].
std::string StreamEnd(const Stream& s) {
  const TaskResult& result = s.job.channel->result();
  std::string out;
  if (result.state != TaskState::kDone) {
    out += StreamError(ErrorFromResult(result).ToJson());
  } else {
    ChunkOptions o;
    o.finish_reason = FinishReason(result.stop_reason);
    o.usage_null = s.job.include_usage;
    out += StreamChunk(s.job.meta, "", o);
    if (s.job.include_usage) out += UsageChunk(s.job.meta, result.metrics);
  }
  out += kStreamDone;
  return out;
}

// One round of the chunked content provider: send what the task produced.
bool StreamRound(Stream& s, httplib::DataSink& sink) {
  TaskChannel::Update u = s.job.channel->Take(s.job.ctx->options.probe_interval);
  std::string out;
  const bool chat = s.job.meta.endpoint == Endpoint::kChatCompletions;
  if (!u.text.empty() || !u.logprobs.empty() || (s.first && chat)) {
    ChunkOptions o;
    o.first = s.first;
    o.usage_null = s.job.include_usage;
    o.logprobs = u.logprobs;
    o.text_offset = u.logprobs_offset;
    out += StreamChunk(s.job.meta, u.text, o);
    s.first = false;
  }
  if (u.done) out += StreamEnd(s);
  const bool gone = out.empty() ? ShouldAbandon(s.job) : !sink.write(out.data(), out.size());
  if (gone) {
    Abandon(s.job);
    return false;
  }
  if (u.done) sink.done();
  return true;
}

void ReplyStream(Job job, httplib::Response& res) {
  auto stream = std::make_shared<Stream>();
  stream->job = std::move(job);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream",
                                   [stream](size_t, httplib::DataSink& sink) { return StreamRound(*stream, sink); });
}

}  // namespace

void HandleCompletion(const std::shared_ptr<ServerContext>& ctx, Endpoint endpoint, const httplib::Request& req,
                      httplib::Response& res) {
  ParsedCompletion parsed =
      ParseCompletionRequest(endpoint, req.body, req.get_header_value("X-Valet-Tier"), ctx->options.defaults);
  if (const ApiError* e = std::get_if<ApiError>(&parsed)) return SendError(*ctx, res, *e);
  CompletionRequest& request = std::get<CompletionRequest>(parsed);
  const bool stream = request.stream;
  std::optional<Job> job = Submit(ctx, std::move(request), res);
  if (!job) return;
  job->watch = ConnectionWatch::Find(req.local_port, req.remote_addr, req.remote_port);
  if (!WaitStarted(*job)) return SendError(*ctx, res, Cancelled());
  // Failed before its first token: a plain error reply, streamed or not.
  if (job->channel->done() && job->channel->result().state != TaskState::kDone) {
    return SendError(*ctx, res, ErrorFromResult(job->channel->result()));
  }
  if (stream) return ReplyStream(std::move(*job), res);
  ReplyWhole(*job, res);
}

}  // namespace valet
