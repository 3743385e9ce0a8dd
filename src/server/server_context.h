// What the HTTP handlers and the scheduler callbacks they install share. The
// callbacks hold it by shared_ptr, so a task finishing after the server has
// stopped still finds it alive.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "engine/engine_interface.h"
#include "sched/chat_renderer.h"
#include "server/completion_request.h"
#include "server/durable_store.h"
#include "server/durable_tasks.h"
#include "server/server_metrics.h"
#include "server/task_table.h"
#include "valet/scheduler.h"

namespace valet {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      // 0: any free port (see ApiServer::port())
  std::string api_key;  // non-empty: /v1/* and /metrics need "Authorization: Bearer <key>"
  std::string model_name = "valet";
  size_t max_body_bytes = size_t{1} << 20;  // larger bodies get 413
  // Unfinished tasks a tier may have; more get 429 with Retry-After.
  std::array<int, kNumTiers> max_tasks_per_tier = {16, 16, 64, 256};
  int retry_after_seconds = 1;
  CompletionDefaults defaults;
  // Threads that parse, render and tokenize requests (a waiting or streaming
  // request holds none); /health, /metrics, /v1/lifecycle, /v1/tasks and
  // /v1/models have one more of their own.
  int request_threads = 2;
  int listen_backlog = 512;
  // Open at once. A newcomer to a full table closes the connection idle
  // longest (between requests, still owing its head, or lingering after its
  // reply); with none idle, the newcomer gets 503.
  size_t max_connections = 1024;
  // A new connection must send a whole request head within header_timeout
  // (a later request on a keep-alive connection: of its first byte), or it
  // is closed, with a 408 if it had begun one: a silent connection holds a
  // slot seconds, not idle_timeout. A request must arrive whole within
  // read_timeout of its first byte (408 otherwise); a keep-alive connection
  // idle for idle_timeout is closed; a client that takes no output for
  // write_timeout is dropped.
  std::chrono::milliseconds header_timeout{5'000};
  std::chrono::milliseconds read_timeout{10'000};
  std::chrono::milliseconds idle_timeout{60'000};
  std::chrono::milliseconds write_timeout{30'000};
  // Stop(): how long cancelled streams get to send their last events.
  std::chrono::milliseconds stop_grace{10'000};
  // Durable tasks over HTTP ("durable": true, /v1/tasks/{id}); off unless
  // durable.dir is set, to the scheduler's durable_dir.
  DurableServerOptions durable;
  // One line per event worth an operator's eye (a journal recovered or
  // skipped at Start); null: valet's log (common/log.h).
  std::function<void(const std::string&)> log;
};

struct ServerContext {
  // `d`: null when durable tasks are off (options.durable.dir empty).
  ServerContext(Scheduler& s, const EngineInterface& v, ServerOptions o, std::unique_ptr<const DurableStore> d)
      : scheduler(s),
        vocab(v),
        tool_syntax(ChatRenderer::ForFormat(v.chat_format()).tool_syntax()),
        options(std::move(o)),
        durable_tasks(options.durable.max_tasks),
        durable(std::move(d)) {}

  Scheduler& scheduler;
  const EngineInterface& vocab;  // tokenizer only: Tokenize/context_length
  const ToolCallSyntax tool_syntax;  // how the model's family writes tool calls, as the scheduler reads them
  const ServerOptions options;
  TaskTable tasks;
  ServerMetrics metrics;
  DurableTaskTable durable_tasks;
  const std::unique_ptr<const DurableStore> durable;  // null: durable tasks are off
  std::atomic<bool> stopping{false};
  // The battery as last reported to POST /v1/power, which merges each
  // partial report into it.
  std::mutex power_mu;
  PowerState power;
};

}  // namespace valet
