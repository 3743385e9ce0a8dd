// Carries one task's output from the inference thread (scheduler callbacks)
// to the HTTP worker thread answering the request. Text is assembled into
// whole UTF-8 characters before the HTTP side sees it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "server/utf8_assembler.h"
#include "valet/scheduler.h"

namespace valet {

class TaskChannel {
 public:
  // Inference thread.
  void OnToken(std::string_view text);
  // A token's log-probabilities (requests with logprobs), before its OnToken.
  void OnLogprobs(const TokenLogprobs& logprobs);
  void OnDone(const TaskResult& result);

  struct Update {
    std::string text;     // new text since the last Take
    bool started = false; // a token arrived or the task ended
    bool done = false;    // the task ended; result() is final
    std::vector<TokenLogprobs> logprobs;  // of the tokens since the last Take
    size_t logprobs_offset = 0;           // bytes of the earlier tokens' pieces (completions' text_offset)
  };
  // HTTP thread: waits up to `timeout` for new text or the end, then takes
  // what there is.
  Update Take(std::chrono::milliseconds timeout);
  // Waits up to `timeout` for the first token or the end, taking nothing.
  bool WaitStarted(std::chrono::milliseconds timeout);
  bool done();
  // Valid once done() or an Update said so.
  const TaskResult& result() const { return result_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Utf8Assembler utf8_;
  std::string pending_;
  std::vector<TokenLogprobs> pending_logprobs_;
  size_t logprobs_taken_bytes_ = 0;
  bool started_ = false;
  bool done_ = false;
  TaskResult result_;
};

}  // namespace valet
