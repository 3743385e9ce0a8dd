// Response bodies in OpenAI's shapes: chat.completion / text_completion
// objects, their streamed chunks, and usage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "server/completion_request.h"
#include "valet/scheduler.h"

namespace valet {

struct ResponseMeta {
  Endpoint endpoint = Endpoint::kChatCompletions;
  std::string id;     // "chatcmpl-valet-<task>" / "cmpl-valet-<task>"
  std::string model;
  int64_t created = 0;  // Unix seconds
  bool logprobs = false;  // the request asked for them (CompletionRequest::logprobs)
};

ResponseMeta MakeResponseMeta(Endpoint endpoint, TaskId task, std::string model);

// "stop" (EOS or a stop string) or "length" (max_tokens).
const char* FinishReason(StopReason reason);

// The whole non-streamed response (with meta.logprobs, result.logprobs in
// the choice's "logprobs"). With an answer that calls tools: its text (null
// when none) and "tool_calls", finish_reason "tool_calls".
std::string CompletionBody(const ResponseMeta& meta, const TaskResult& result);

struct ChunkOptions {
  bool first = false;               // chat: the delta carries the role
  const char* finish_reason = nullptr;  // set on the last content chunk
  bool usage_null = false;          // include_usage: every chunk carries "usage": null
  // With meta.logprobs: the tokens since the previous chunk, and (completions)
  // the byte offset of the first one's text in the whole completion.
  std::span<const TokenLogprobs> logprobs;
  size_t text_offset = 0;
};
// One SSE event ("data: {...}\n\n") carrying `text`.
std::string StreamChunk(const ResponseMeta& meta, std::string_view text, const ChunkOptions& options);
// The calls of a streamed answer, each whole in one delta.
std::string ToolCallsChunk(const ResponseMeta& meta, const std::vector<ToolCall>& calls, const ChunkOptions& options);
// The final include_usage event: empty choices, the usage object.
std::string UsageChunk(const ResponseMeta& meta, const TaskMetrics& metrics);
// An error reported inside a stream that has already started.
std::string StreamError(const std::string& error_json);
inline constexpr std::string_view kStreamDone = "data: [DONE]\n\n";
// An SSE comment, which readers ignore: what the transport sends to learn
// whether a client that sent EOF mid-stream is still there.
inline constexpr std::string_view kStreamProbe = ":\n\n";

}  // namespace valet
