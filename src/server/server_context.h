// What the HTTP handlers and the scheduler callbacks they install share. The
// callbacks hold it by shared_ptr, so a task finishing after the server has
// stopped still finds it alive.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

#include "engine/engine_interface.h"
#include "server/completion_request.h"
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
  int http_threads = 32;  // concurrent connections served; each streaming request holds one
  CompletionDefaults defaults;
  // How often a waiting request checks that its client is still connected.
  std::chrono::milliseconds probe_interval{50};
};

struct ServerContext {
  ServerContext(Scheduler& s, const EngineInterface& v, ServerOptions o)
      : scheduler(s), vocab(v), options(std::move(o)) {}

  Scheduler& scheduler;
  const EngineInterface& vocab;  // tokenizer only: Tokenize/context_length
  const ServerOptions options;
  TaskTable tasks;
  ServerMetrics metrics;
  std::atomic<bool> stopping{false};
};

}  // namespace valet
