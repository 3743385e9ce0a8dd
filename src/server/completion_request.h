// Parses OpenAI /v1/chat/completions and /v1/completions request bodies into
// a scheduler TaskRequest. Unknown fields are ignored; a known field of the
// wrong type or out of range is a 400 naming the field, and so is a field
// valet cannot honour (unsupported_fields.h). The body goes through
// ParseClientJson (client_json.h): nesting is limited before any document is
// built, and nothing here copies or dumps the client's JSON.
//
// Tier, first match wins: the body's "tier" (a tier name), the body's integer
// "priority" (lower runs first, vLLM/SGLang style) by band, the X-Valet-Tier
// header, then the endpoint's default (chat: foreground_chat; completions:
// inline_suggestion, the editor-completion use of that endpoint).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "server/api_error.h"
#include "server/tool_request.h"
#include "valet/scheduler.h"

namespace valet {

enum class Endpoint { kChatCompletions, kCompletions };
const char* EndpointName(Endpoint endpoint);

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChatCompletions;
  TaskRequest task;  // callbacks unset; durable and durable_key from "durable" and "durable_key"
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool logprobs = false;       // the answer carries logprobs (task.top_logprobs >= 0)
  // No "model": one model is served whatever the request names, and answers
  // carry its name (ServerOptions::model_name), never the request's text.
};

using ParsedCompletion = std::variant<CompletionRequest, ApiError>;

struct CompletionDefaults {
  // max_tokens for requests that give neither max_tokens nor
  // max_completion_tokens; 0: until the context is full, as OpenAI's API and
  // llama-server do (finish_reason "length" when it fills).
  int32_t chat_max_tokens = 0;
  int32_t completion_max_tokens = 0;
  // Token-id prompts must be below it (a 400 otherwise); 0: unknown, only
  // the engine checks them (the task then fails).
  int32_t vocab_size = 0;
};

// InvalidArgument for a negative default max_tokens or vocab_size.
Status CheckCompletionDefaults(const CompletionDefaults& defaults);

// "foreground_chat", ... (or the upper-case enum names); nullopt otherwise.
std::optional<Tier> TierFromName(std::string_view name);
// The lower-case name used in requests and responses.
const char* TierApiName(Tier tier);
// Priority bands: <= 0 foreground_chat, 1..9 inline_suggestion,
// 10..99 background_summary, >= 100 offline_indexing.
Tier TierFromPriority(int64_t priority);

// A token-id prompt becomes TaskRequest::prompt_tokens, fed to the model exactly.
ParsedCompletion ParseCompletionRequest(Endpoint endpoint, std::string_view body, std::string_view tier_header,
                                        const CompletionDefaults& defaults);

}  // namespace valet
