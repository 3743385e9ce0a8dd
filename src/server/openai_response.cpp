#include "server/openai_response.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <utility>

#include "server/openai_logprobs.h"

namespace valet {

namespace {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json Usage(const TaskMetrics& m) {
  return {{"prompt_tokens", m.prompt_tokens},
          {"completion_tokens", m.generated_tokens},
          {"total_tokens", m.prompt_tokens + m.generated_tokens},
          {"prompt_tokens_details", {{"cached_tokens", m.cached_prompt_tokens}}}};
}

bool IsChat(const ResponseMeta& meta) { return meta.endpoint == Endpoint::kChatCompletions; }

json Envelope(const ResponseMeta& meta, bool chunk) {
  const char* object = IsChat(meta) ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model},
          {"system_fingerprint", "valet"}};
}

json FinishOrNull(const char* reason) { return reason ? json(reason) : json(nullptr); }

json LogprobsOrNull(const ResponseMeta& meta, std::span<const TokenLogprobs> tokens, size_t text_offset) {
  if (!meta.logprobs || tokens.empty()) return nullptr;
  return IsChat(meta) ? ChatLogprobs(tokens) : CompletionLogprobs(tokens, text_offset);
}

}  // namespace

ResponseMeta MakeResponseMeta(Endpoint endpoint, TaskId task, std::string model) {
  ResponseMeta meta;
  meta.endpoint = endpoint;
  meta.id = std::string(endpoint == Endpoint::kChatCompletions ? "chatcmpl-valet-" : "cmpl-valet-") +
            std::to_string(task);
  meta.model = std::move(model);
  meta.created = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
  return meta;
}

const char* FinishReason(StopReason reason) { return reason == StopReason::kMaxTokens ? "length" : "stop"; }

static json ToolCallsJson(const std::vector<ToolCall>& calls, bool indexed) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json call = {{"id", calls[i].id},
                 {"type", "function"},
                 {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (indexed) call["index"] = i;
    out.push_back(std::move(call));
  }
  return out;
}

std::string CompletionBody(const ResponseMeta& meta, const TaskResult& result) {
  json body = Envelope(meta, /*chunk=*/false);
  json logprobs = nullptr;
  if (meta.logprobs) logprobs = IsChat(meta) ? ChatLogprobs(result.logprobs) : CompletionLogprobs(result.logprobs, 0);
  json choice = {{"index", 0}, {"finish_reason", FinishReason(result.stop_reason)}, {"logprobs", std::move(logprobs)}};
  if (IsChat(meta) && !result.tool_calls.empty()) {
    choice["message"] = {{"role", "assistant"},
                         {"content", result.content.empty() ? json(nullptr) : json(result.content)},
                         {"tool_calls", ToolCallsJson(result.tool_calls, false)}};
    choice["finish_reason"] = "tool_calls";
  } else if (IsChat(meta)) {
    choice["message"] = {{"role", "assistant"}, {"content", result.text}};
  } else {
    choice["text"] = result.text;
  }
  body["choices"] = json::array({std::move(choice)});
  body["usage"] = Usage(result.metrics);
  return Dump(body);
}

std::string StreamChunk(const ResponseMeta& meta, std::string_view text, const ChunkOptions& options) {
  json body = Envelope(meta, /*chunk=*/true);
  json choice = {{"index", 0},
                 {"finish_reason", FinishOrNull(options.finish_reason)},
                 {"logprobs", LogprobsOrNull(meta, options.logprobs, options.text_offset)}};
  if (IsChat(meta)) {
    json delta = json::object();
    if (options.first) delta["role"] = "assistant";
    if (!text.empty() || options.first || !choice["logprobs"].is_null()) delta["content"] = std::string(text);
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = std::string(text);
  }
  body["choices"] = json::array({std::move(choice)});
  if (options.usage_null) body["usage"] = nullptr;
  return "data: " + Dump(body) + "\n\n";
}

std::string ToolCallsChunk(const ResponseMeta& meta, const std::vector<ToolCall>& calls, const ChunkOptions& options) {
  json body = Envelope(meta, /*chunk=*/true);
  json choice = {{"index", 0}, {"finish_reason", nullptr}, {"logprobs", nullptr}};
  choice["delta"] = {{"tool_calls", ToolCallsJson(calls, true)}};
  body["choices"] = json::array({std::move(choice)});
  if (options.usage_null) body["usage"] = nullptr;
  return "data: " + Dump(body) + "\n\n";
}

std::string UsageChunk(const ResponseMeta& meta, const TaskMetrics& metrics) {
  json body = Envelope(meta, /*chunk=*/true);
  body["choices"] = json::array();
  body["usage"] = Usage(metrics);
  return "data: " + Dump(body) + "\n\n";
}

std::string StreamError(const std::string& error_json) { return "data: " + error_json + "\n\n"; }

}  // namespace valet
