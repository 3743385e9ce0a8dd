// The contention scenario's tasks sent to an OpenAI-compatible server over
// HTTP (valet serve, llama-server, vLLM): each task is one streamed request
// on its own thread, timed on the client as vLLM's `bench serve` times it.
//
// A chat task (messages) goes to /v1/chat/completions, system prompt first;
// any other task to /v1/completions. Every request streams with
// stream_options.include_usage and carries the task's sampling fields, so two
// servers get the same requests. With ApiFlavor::kOpenAi the task's tier goes
// in the body's "tier" (valet's extension); kLlamaCpp leaves it out, since
// llama-server has no tiers.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "testing/bench/contention_session.h"
#include "valet/scheduler.h"
#include "valet/status.h"

namespace valet::testing {

enum class ApiFlavor { kOpenAi, kLlamaCpp };
const char* ApiFlavorName(ApiFlavor api);
// "openai" or "llamacpp"; InvalidArgument otherwise.
Result<ApiFlavor> ApiFlavorFromName(const std::string& name);

struct LoadTarget {
  std::string url;  // http://host:port (no path)
  ApiFlavor api = ApiFlavor::kOpenAi;
  std::string model = "valet";  // the requests' "model" field
  // Replaces every request's temperature; 0 is greedy, which two servers
  // whose random generators differ still agree on.
  std::optional<float> temperature;
};

// The path and JSON body of the streamed request for `task`.
struct HttpTaskRequest {
  std::string path;
  std::string body;
};
HttpTaskRequest BuildHttpRequest(const TaskRequest& task, const LoadTarget& target);

// What one streamed response said, parsed incrementally from its SSE bytes.
class SseCompletionReader {
 public:
  // Feeds response bytes; `now` stamps the first and latest text.
  void Feed(std::string_view bytes, double now);
  bool saw_done() const { return saw_done_; }
  double first_text_time() const { return first_text_time_; }
  double last_text_time() const { return last_text_time_; }
  int32_t text_chunks() const { return text_chunks_; }
  const std::string& text() const { return text_; }
  const std::string& error() const { return error_; }
  // From the usage chunk; -1 when the server sent none.
  int32_t prompt_tokens() const { return prompt_tokens_; }
  int32_t completion_tokens() const { return completion_tokens_; }
  int32_t cached_tokens() const { return cached_tokens_; }

 private:
  void Event(std::string_view data, double now);

  std::string pending_;
  bool saw_done_ = false;
  double first_text_time_ = -1.0;
  double last_text_time_ = -1.0;
  int32_t text_chunks_ = 0;
  std::string text_;
  std::string error_;
  int32_t prompt_tokens_ = -1;
  int32_t completion_tokens_ = -1;
  int32_t cached_tokens_ = -1;
};

class HttpScenarioSink : public ScenarioSink {
 public:
  // Checks the URL and that a server answers GET /v1/models there; the error
  // names the URL and what went wrong.
  static Result<std::unique_ptr<HttpScenarioSink>> Connect(const LoadTarget& target, CompletionQueue& done);
  ~HttpScenarioSink() override;  // Join()

  // Starts the request on its own thread; its result goes to the queue:
  // DONE with an OK status, DONE with the error of an error event that came
  // after the answer's text, or FAILED.
  Result<TaskId> Submit(TaskRequest request) override;
  // A server has no app lifecycle or memory signals to drive: Unsupported.
  Status Lifecycle(LifecycleEvent event) override;
  Status TrimMemory(TrimLevel level) override;
  // Client-side runs have no scheduler counters: all zero.
  SchedulerStats Stats() const override { return {}; }

  // Tokens of `text` without BOS by the server's POST /tokenize (valet serve
  // and llama-server both have it).
  Result<int32_t> CountTokens(const std::string& text) const;
  // Waits for every request started so far.
  void Join();

 private:
  HttpScenarioSink(const LoadTarget& target, CompletionQueue& done) : target_(target), done_(done) {}
  TaskResult Run(const TaskRequest& task) const;

  const LoadTarget target_;
  CompletionQueue& done_;
  std::atomic<TaskId> next_id_{1};
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

}  // namespace valet::testing
