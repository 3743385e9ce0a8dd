// Turns a TaskRequest into what the scheduler core runs: checked, the chat
// rendered with the model's template, tokenized, fitted to the context, its
// stop conditions set. It only reads what it copied from the engine at
// construction and calls EngineInterface::Tokenize, which is thread-safe, so
// the threaded Scheduler prepares on the submitting thread: a 24,000-message
// chat costs its own caller, not every stream the inference thread runs.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/engine_interface.h"
#include "sampling/stop_condition.h"
#include "sched/chat_renderer.h"
#include "sched/tool_use.h"
#include "valet/scheduler.h"

namespace valet {

// A request ready to be queued. The KV pool check is left to admission: the
// pool's budget changes on the inference thread.
struct PreparedTask {
  TaskRequest request;
  SequenceSpec spec;
  std::vector<int32_t> prompt;  // the task's own tokens, after spec.shared_prefix
  // The request's max_tokens, or for 0 what is left of the context.
  int32_t max_tokens = 0;
  // Asked for no limit (max_tokens 0): admission may shorten max_tokens to
  // what the KV pool holds alone, rather than refusing the task.
  bool until_context_end = false;
  StopOptions stop;  // max_tokens set at admission
  std::optional<ToolUse> tool_use;  // the request offers tools it may call

  int64_t prompt_tokens() const { return static_cast<int64_t>(spec.shared_prefix.size() + prompt.size()); }
};

class TaskPreparer {
 public:
  TaskPreparer(const EngineInterface& engine, ChatRendererOptions chat_options);

  // InvalidArgument (tier, empty prompt, negative max_tokens, top_logprobs
  // out of range, empty stop strings, a chat the template refuses, a prompt
  // that tokenizes to nothing) or OutOfRange (prompt + max_tokens over the
  // context). Any thread.
  Result<PreparedTask> Prepare(TaskRequest request) const;

  const ChatRenderer& chat() const { return chat_; }
  int32_t context_length() const { return context_length_; }

 private:
  Status CheckFields(const TaskRequest& request) const;
  // The prompt as tokens: rendered (chat or raw, with the shared prefix in
  // spec->shared_prefix) or the request's own token ids.
  Status Tokenize(const TaskRequest& request, PreparedTask* out) const;
  Status FitContext(PreparedTask* out) const;

  const EngineInterface& engine_;
  const int32_t context_length_;
  const std::vector<int32_t> eog_tokens_;
  const ChatRenderer chat_;
};

}  // namespace valet
