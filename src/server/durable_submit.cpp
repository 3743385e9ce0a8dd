#include "server/durable_submit.h"

#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>

#include "common/log.h"
#include "server/http_reply.h"

namespace valet {

namespace {

// Unique across restarts without coordination: 128 random bits.
std::string NewTaskKey() {
  std::random_device device;
  std::string key = "task-";
  char hex[9];
  for (int i = 0; i < 4; ++i) {
    std::snprintf(hex, sizeof(hex), "%08x", static_cast<unsigned>(device()));
    key += hex;
  }
  return key;
}

void Report(const ServerContext& ctx, LogLevel level, const std::string& line) {
  if (ctx.options.log) return ctx.options.log(line);
  Log(level, line);
}

// `slot` may be null (a task recovered while the server was not running yet
// gets one too, but nothing requires it). `resumed` is how many tokens the
// task had generated before a restart: its usage counts them as generated.
TaskCallbacks DurableCallbacks(const std::shared_ptr<ServerContext>& ctx, std::shared_ptr<TaskSlot> slot,
                               const std::string& key, size_t resumed) {
  TaskCallbacks cb;
  cb.on_state = [ctx, slot, key](TaskId id, TaskState state) {
    if (slot) ctx->tasks.SetState(*slot, id, state);
    ctx->durable_tasks.OnState(key, state);
  };
  cb.on_token = [ctx, slot, key](TaskId id, int32_t token, std::string_view) {
    if (slot) ctx->tasks.AddToken(*slot, id);
    ctx->durable_tasks.OnToken(key, token);
  };
  cb.on_done = [ctx, slot, key, resumed](TaskId id, const TaskResult& result) {
    if (slot) ctx->tasks.SetState(*slot, id, result.state);
    ctx->metrics.ObserveFinished(result);
    // Ack waits for the inference thread, which never waits for a callback;
    // the task is gone from the scheduler by the time its on_done runs.
    if (ctx->durable_tasks.OnDone(key, result, resumed)) (void)ctx->scheduler.Ack(key).ok();
  };
  return cb;
}

std::string AcceptedBody(const std::string& key, TaskState state) {
  nlohmann::json body = {{"id", key}, {"object", "valet.task"}, {"state", TaskStateName(state)}};
  return body.dump();
}

// A recovered task's entry: its request's endpoint and stop strings come
// from its journal.
DurableEntry RecoveredEntry(const ServerContext& ctx, const RecoveredTask& r) {
  DurableEntry e;
  e.key = r.durable_key;
  e.tier = r.tier;
  if (Result<JournalContents> c = ctx.durable->Read(r.durable_key); c.ok()) {
    e.endpoint = EndpointOf(c->request);
    e.stop = c->request.stop;
  }
  return e;
}

// Runs on the thread that calls Recover, before the recovered task's first
// callback: registers it.
TaskCallbacks OnRecovered(const std::shared_ptr<ServerContext>& ctx, const RecoveredTask& r) {
  DurableEntry e = RecoveredEntry(*ctx, r);
  e.id = r.id;
  e.tokens = r.tokens;
  std::shared_ptr<TaskSlot> slot =
      ctx->tasks.Reserve(r.tier, std::numeric_limits<int>::max(), EndpointName(e.endpoint));
  if (slot) ctx->tasks.Record(*slot, r.id);
  ctx->durable_tasks.AddRecovered(std::move(e));
  return DurableCallbacks(ctx, std::move(slot), r.durable_key, r.tokens.size());
}

// A task that had ended before this run: listed until its DELETE.
void AddEnded(ServerContext& ctx, const RecoveredTask& r) {
  DurableEntry e = RecoveredEntry(ctx, r);
  e.state = r.state;
  e.stop_reason = r.stop_reason;
  e.error = r.error;
  ctx.durable_tasks.AddRecovered(std::move(e));
}

std::string RecoveredLine(const RecoveredTask& r) {
  std::string line = "valet serve: durable task " + r.durable_key + ": ";
  if (r.id != 0 && r.state == TaskState::kQueued) {
    return line + "resumed after " + std::to_string(r.tokens.size()) + " tokens (task " + std::to_string(r.id) + ")";
  }
  if (r.state == TaskState::kFailed) return line + "could not be resumed: " + r.error;
  return line + "ended (" + TaskStateName(r.state) + ", " + std::to_string(r.tokens.size()) +
         " tokens); kept until DELETE";
}

}  // namespace

std::optional<ApiError> CheckDurableRequest(const ServerContext& ctx, const CompletionRequest& request) {
  if (!request.task.durable || ctx.durable) return std::nullopt;
  return BadRequest("durable tasks need a journal directory: start valet serve with --snapshot-dir", "durable",
                    "durable_unavailable");
}

void SubmitDurable(const std::shared_ptr<ServerContext>& ctx, const std::shared_ptr<http::HttpExchange>& exchange,
                   std::shared_ptr<TaskSlot> slot, CompletionRequest request) {
  TaskRequest& task = request.task;
  if (task.durable_key.empty()) task.durable_key = NewTaskKey();
  const std::string key = task.durable_key;
  DurableEntry entry;
  entry.key = key;
  entry.endpoint = request.endpoint;
  entry.tier = task.tier;
  entry.stop = task.stop;
  const DurableTaskTable::Reservation reserved = ctx->durable_tasks.Reserve(entry);
  if (reserved != DurableTaskTable::Reservation::kReserved) {
    ctx->tasks.Release(*slot);
    if (reserved == DurableTaskTable::Reservation::kTaken) {
      return exchange->Reply(
          ErrorReply(*ctx, ApiErrorOf(409, "durable task '" + key + "' exists already", "task_exists")));
    }
    http::HttpResponse reply =
        ErrorReply(*ctx, ApiErrorOf(429,
                                    "the server keeps " + std::to_string(ctx->options.durable.max_tasks) +
                                        " durable tasks already; DELETE finished ones first",
                                    "too_many_durable_tasks"));
    reply.headers.emplace_back("Retry-After", std::to_string(ctx->options.retry_after_seconds));
    return exchange->Reply(std::move(reply));
  }
  task.callbacks = DurableCallbacks(ctx, slot, key, 0);
  Result<TaskId> id = ctx->scheduler.Submit(std::move(task));
  if (!id.ok()) {
    ctx->durable_tasks.Release(key);
    ctx->tasks.Release(*slot);
    // Submit checks a durable task's journal directory against its disk
    // budget before anything else (a pool too small for the task fails later,
    // through the callbacks): the directory is full of unacknowledged results.
    if (id.status().code() == StatusCode::kResourceExhausted) {
      return exchange->Reply(ErrorReply(*ctx, ApiErrorOf(507, id.status().message(), "durable_budget_exhausted")));
    }
    return exchange->Reply(ErrorReply(*ctx, ErrorFromStatus(id.status())));
  }
  ctx->tasks.Record(*slot, *id);
  ctx->durable_tasks.Started(key, *id);
  const std::optional<DurableEntry> now = ctx->durable_tasks.Find(key);
  http::HttpResponse reply = JsonReply(202, AcceptedBody(key, now ? now->state : TaskState::kQueued));
  reply.headers.emplace_back("Location", std::string("/v1/tasks/") + key);
  exchange->Reply(std::move(reply));
}

Status RecoverDurableTasks(const std::shared_ptr<ServerContext>& ctx) {
  if (!ctx->durable) return Status::Ok();
  VALET_ASSIGN_OR_RETURN(RecoveryReport report,
                         ctx->scheduler.Recover([ctx](const RecoveredTask& r) { return OnRecovered(ctx, r); }));
  for (const RecoveredTask& r : report.tasks) {
    if (r.id == 0) AddEnded(*ctx, r);
    Report(*ctx, r.state == TaskState::kFailed ? LogLevel::kWarn : LogLevel::kInfo, RecoveredLine(r));
  }
  for (const auto& [path, why] : report.skipped) {
    Report(*ctx, LogLevel::kWarn, "valet serve: skipped " + path + ": " + why.ToString());
  }
  return Status::Ok();
}

}  // namespace valet
