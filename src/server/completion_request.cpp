#include "server/completion_request.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "durable/task_journal.h"
#include "server/client_json.h"
#include "server/client_text.h"
#include "server/response_format.h"
#include "server/unsupported_fields.h"

namespace valet {

namespace {

using nlohmann::json;
using MaybeError = std::optional<ApiError>;

constexpr size_t kMaxStopStrings = 16;
// repeat_last_n's bound: the sampler keeps and sorts that window at every
// token, so a client cannot make one task's sampling arbitrarily costly.
constexpr int64_t kMaxRepeatLastN = 8192;

struct TierInfo {
  Tier tier;
  const char* api_name;
};
constexpr TierInfo kTiers[] = {
    {Tier::kForegroundChat, "foreground_chat"},
    {Tier::kInlineSuggestion, "inline_suggestion"},
    {Tier::kBackgroundSummary, "background_summary"},
    {Tier::kOfflineIndexing, "offline_indexing"},
};

ApiError RangeError(const std::string& param, const std::string& range) {
  return BadRequest("'" + param + "' must be " + range, param, "invalid_value");
}

// Reads an optional number field within [lo, hi] into *out.
MaybeError ReadNumber(const json& body, const char* key, double lo, double hi, float* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return TypeError(key, "a number");
  const double v = it->get<double>();
  if (!(v >= lo && v <= hi)) return RangeError(key, "between " + json(lo).dump() + " and " + json(hi).dump());
  *out = static_cast<float>(v);
  return std::nullopt;
}

// Reads an optional integer field within [lo, hi]; nullopt result when absent.
MaybeError ReadInt(const json& body, const char* key, int64_t lo, int64_t hi, std::optional<int64_t>* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) return TypeError(key, "an integer");
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi)) {
    return RangeError(key, "at most " + std::to_string(hi));
  }
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) return RangeError(key, "between " + std::to_string(lo) + " and " + std::to_string(hi));
  *out = v;
  return std::nullopt;
}

MaybeError ReadBool(const json& body, const char* key, bool* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return TypeError(key, "a boolean");
  *out = it->get<bool>();
  return std::nullopt;
}

MaybeError ReadSampling(const json& body, SamplingParams* s) {
  if (auto e = ReadNumber(body, "temperature", 0.0, 2.0, &s->temperature)) return e;
  if (auto e = ReadNumber(body, "top_p", 0.0, 1.0, &s->top_p)) return e;
  if (auto e = ReadNumber(body, "min_p", 0.0, 1.0, &s->min_p)) return e;
  std::optional<int64_t> top_k, seed;
  if (auto e = ReadInt(body, "top_k", 0, std::numeric_limits<int32_t>::max(), &top_k)) return e;
  if (top_k) s->top_k = static_cast<int32_t>(*top_k);
  if (auto e = ReadInt(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), &seed)) {
    return e;
  }
  if (seed) s->seed = static_cast<uint64_t>(*seed);
  if (auto e = ReadNumber(body, "presence_penalty", -2.0, 2.0, &s->presence_penalty)) return e;
  if (auto e = ReadNumber(body, "frequency_penalty", -2.0, 2.0, &s->frequency_penalty)) return e;
  // llama-server's repetition penalty over the last repeat_last_n tokens, the
  // prompt's included (the CLI's --repeat-penalty has the same range): a
  // client that sends it gets it, never a silently different sampler.
  if (auto e = ReadNumber(body, "repeat_penalty", 0.001, 100.0, &s->repeat_penalty)) return e;
  std::optional<int64_t> last_n;
  if (auto e = ReadInt(body, "repeat_last_n", 0, kMaxRepeatLastN, &last_n)) return e;
  if (last_n) s->repeat_last_n = static_cast<int32_t>(*last_n);
  return std::nullopt;
}

// The sampled token's logprob and the top N: chat's "logprobs": true with
// "top_logprobs" 0..20, completions' "logprobs": 0..5 (OpenAI's ranges).
MaybeError ReadLogprobs(const json& body, Endpoint endpoint, CompletionRequest* r) {
  std::optional<int64_t> top;
  if (endpoint == Endpoint::kCompletions) {
    if (auto e = ReadInt(body, "logprobs", 0, 5, &top)) return e;
  } else {
    bool wanted = false;
    if (auto e = ReadBool(body, "logprobs", &wanted)) return e;
    if (auto e = ReadInt(body, "top_logprobs", 0, kMaxTopLogprobs, &top)) return e;
    if (top && !wanted) return BadRequest("'top_logprobs' needs \"logprobs\": true", "top_logprobs", "invalid_value");
    if (wanted && !top) top = 0;
  }
  r->logprobs = top.has_value();
  r->task.top_logprobs = top ? static_cast<int32_t>(*top) : -1;
  return std::nullopt;
}

MaybeError ReadMaxTokens(const json& body, int32_t fallback, int32_t* out) {
  std::optional<int64_t> v;
  for (const char* key : {"max_completion_tokens", "max_tokens"}) {
    if (auto e = ReadInt(body, key, 1, std::numeric_limits<int32_t>::max(), &v)) return e;
    if (v) break;
  }
  *out = v ? static_cast<int32_t>(*v) : fallback;
  return std::nullopt;
}

MaybeError ReadStop(const json& body, std::vector<std::string>* out) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    if (it->get_ref<const std::string&>().empty()) return RangeError("stop", "a non-empty string");
    out->push_back(it->get<std::string>());
    return std::nullopt;
  }
  if (!it->is_array()) return TypeError("stop", "a string or an array of strings");
  if (it->size() > kMaxStopStrings) return RangeError("stop", "at most " + std::to_string(kMaxStopStrings) + " strings");
  for (const json& s : *it) {
    if (!s.is_string() || s.get_ref<const std::string&>().empty()) {
      return TypeError("stop", "a string or an array of non-empty strings");
    }
    out->push_back(s.get<std::string>());
  }
  return std::nullopt;
}

MaybeError ReadStreamFlags(const json& body, CompletionRequest* r) {
  if (auto e = ReadBool(body, "stream", &r->stream)) return e;
  auto it = body.find("stream_options");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return TypeError("stream_options", "an object");
  if (auto e = ReadBool(*it, "include_usage", &r->include_usage)) {
    e->param = "stream_options.include_usage";
    return e;
  }
  return std::nullopt;
}

MaybeError ReadTier(const json& body, std::string_view header, Endpoint endpoint, Tier* out) {
  if (auto it = body.find("tier"); it != body.end() && !it->is_null()) {
    std::optional<Tier> t = it->is_string() ? TierFromName(it->get_ref<const std::string&>()) : std::nullopt;
    if (!t) return RangeError("tier", "one of foreground_chat, inline_suggestion, background_summary, offline_indexing");
    *out = *t;
    return std::nullopt;
  }
  std::optional<int64_t> priority;
  if (auto e = ReadInt(body, "priority", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                       &priority)) {
    return e;
  }
  if (priority) {
    *out = TierFromPriority(*priority);
    return std::nullopt;
  }
  if (!header.empty()) {
    std::optional<Tier> t = TierFromName(header);
    if (!t) {
      return BadRequest("X-Valet-Tier must name a tier, got " + QuoteClientText(header), "X-Valet-Tier",
                        "invalid_value");
    }
    *out = *t;
    return std::nullopt;
  }
  *out = endpoint == Endpoint::kChatCompletions ? Tier::kForegroundChat : Tier::kInlineSuggestion;
  return std::nullopt;
}

// A message's content: a string, null, or an array of {"type":"text","text":...} parts.
MaybeError ReadContent(const json& message, const std::string& param, std::string* out) {
  auto it = message.find("content");
  if (it == message.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    *out = it->get<std::string>();
    return std::nullopt;
  }
  if (!it->is_array()) return TypeError(param, "a string or an array of text parts");
  for (const json& part : *it) {
    auto type = part.is_object() ? part.find("type") : part.end();
    const bool text_part = type != part.end() && type->is_string() && type->get_ref<const std::string&>() == "text";
    auto text = text_part ? part.find("text") : part.end();
    if (!text_part || text == part.end() || !text->is_string()) {
      return BadRequest("'" + param + "' parts must be {\"type\": \"text\", \"text\": string}", param,
                        "unsupported_content");
    }
    out->append(text->get_ref<const std::string&>());
  }
  return std::nullopt;
}

MaybeError ReadMessage(const json& m, size_t index, ChatMessage* out) {
  const std::string param = "messages[" + std::to_string(index) + "]";
  if (!m.is_object()) return TypeError(param, "an object");
  auto role = m.find("role");
  if (role == m.end() || !role->is_string()) return TypeError(param + ".role", "a string");
  const std::string& r = role->get_ref<const std::string&>();
  if (r == "system" || r == "developer") {
    out->role = "system";
  } else if (r == "user" || r == "assistant" || r == "tool") {
    out->role = r;
  } else {
    return BadRequest("unsupported role " + QuoteClientText(r) + " (system, developer, user, assistant, tool)",
                      param + ".role", "unsupported_value");
  }
  if (r == "assistant") {
    if (auto e = ReadToolCalls(m, param, &out->tool_calls)) return e;
  }
  if (r == "tool") {
    auto id = m.find("tool_call_id");
    if (id == m.end() || !id->is_string()) return TypeError(param + ".tool_call_id", "a string");
    out->tool_call_id = id->get<std::string>();
  }
  return ReadContent(m, param + ".content", &out->content);
}

MaybeError ReadMessages(const json& body, TaskRequest* task) {
  auto it = body.find("messages");
  if (it == body.end()) return BadRequest("'messages' is required", "messages", "missing_field");
  if (!it->is_array() || it->empty()) return TypeError("messages", "a non-empty array");
  std::vector<ChatMessage> messages(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    if (auto e = ReadMessage((*it)[i], i, &messages[i])) return e;
  }
  // A leading system message becomes the shared prefix, so its KV is kept
  // once for every conversation that starts with it.
  if (messages.size() > 1 && messages.front().role == "system") {
    task->system_prompt = std::move(messages.front().content);
    messages.erase(messages.begin());
  }
  task->messages = std::move(messages);
  return std::nullopt;
}

// Token ids are the prompt exactly: the scheduler feeds them as given.
MaybeError ReadTokenIds(const json& ids, int32_t vocab_size, std::vector<int32_t>* out) {
  const int64_t limit = vocab_size > 0 ? vocab_size : int64_t{std::numeric_limits<int32_t>::max()} + 1;
  for (const json& id : ids) {
    if (!id.is_number_integer()) return TypeError("prompt", "a string, or an array of token ids");
    const bool in_range = id.is_number_unsigned() ? id.get<uint64_t>() < static_cast<uint64_t>(limit)
                                                  : id.get<int64_t>() >= 0 && id.get<int64_t>() < limit;
    if (!in_range) {
      const std::string got =
          id.is_number_unsigned() ? std::to_string(id.get<uint64_t>()) : std::to_string(id.get<int64_t>());
      return RangeError("prompt", "token ids in [0, " + std::to_string(limit) + "), got " + got);
    }
    out->push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return std::nullopt;
}

MaybeError ReadPrompt(const json& body, int32_t vocab_size, TaskRequest* task) {
  auto it = body.find("prompt");
  if (it == body.end()) return BadRequest("'prompt' is required", "prompt", "missing_field");
  const json* p = &*it;  // a pointer, never a copy of client JSON
  // A batch of one prompt is the prompt.
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  if (p->is_array() && !p->empty() && ((*p)[0].is_string() || (*p)[0].is_array())) {
    return BadRequest("batched prompts are not supported; send one prompt per request", "prompt", "unsupported_value");
  }
  if (p->is_string()) {
    task->prompt = p->get<std::string>();
  } else if (p->is_array()) {
    if (auto e = ReadTokenIds(*p, vocab_size, &task->prompt_tokens)) return e;
  } else {
    return TypeError("prompt", "a string, or an array of token ids");
  }
  if (task->prompt.empty() && task->prompt_tokens.empty()) {
    return BadRequest("the prompt is empty", "prompt", "invalid_value");
  }
  return std::nullopt;
}

MaybeError ReadCommon(const json& body, CompletionRequest* r) {
  // Checked, never kept: the answer names the served model (as OpenAI's
  // does), so a client's "model" is not echoed into every stream chunk.
  if (auto it = body.find("model"); it != body.end() && !it->is_null() && !it->is_string()) {
    return TypeError("model", "a string");
  }
  std::optional<int64_t> n, best_of;
  if (auto e = ReadInt(body, "n", 1, std::numeric_limits<int32_t>::max(), &n)) return e;
  if (auto e = ReadInt(body, "best_of", 1, std::numeric_limits<int32_t>::max(), &best_of)) return e;
  if (auto e = ReadStreamFlags(body, r)) return e;
  if (auto e = ReadStop(body, &r->task.stop)) return e;
  return ReadSampling(body, &r->task.sampling);
}

// "durable": true journals the task; it is answered 202 at once and its
// result fetched later (/v1/tasks/{id}/result), so it is never a stream, and
// it has no log-probabilities: the journal does not keep them.
MaybeError ReadDurable(const json& body, CompletionRequest* r) {
  if (auto e = ReadBool(body, "durable", &r->task.durable)) return e;
  if (auto it = body.find("durable_key"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return TypeError("durable_key", "a string");
    if (!r->task.durable) return BadRequest("'durable_key' needs \"durable\": true", "durable_key", "invalid_value");
    if (!CheckTaskKey(it->get_ref<const std::string&>()).ok()) {
      return RangeError("durable_key", "1 to 128 of A-Z a-z 0-9 _ . - not starting with '.'");
    }
    r->task.durable_key = it->get<std::string>();
  }
  if (!r->task.durable) return std::nullopt;
  if (r->stream) {
    return BadRequest("a durable task is answered through /v1/tasks/{id}/result, never streamed: drop \"stream\"",
                      "stream", "durable_stream");
  }
  if (r->logprobs) {
    return BadRequest("durable tasks do not keep log-probabilities (a resumed task could not answer them)",
                      "logprobs", "unsupported_value");
  }
  if (!r->task.tools.empty()) {
    return BadRequest("durable tasks answer text; a request whose answer may call tools is not durable",
                      "tools", "unsupported_value");
  }
  return std::nullopt;
}

}  // namespace

const char* EndpointName(Endpoint endpoint) {
  return endpoint == Endpoint::kChatCompletions ? "chat.completions" : "completions";
}

std::optional<Tier> TierFromName(std::string_view name) {
  for (const TierInfo& t : kTiers) {
    if (name == t.api_name || name == TierName(t.tier)) return t.tier;
  }
  return std::nullopt;
}

const char* TierApiName(Tier tier) {
  for (const TierInfo& t : kTiers) {
    if (t.tier == tier) return t.api_name;
  }
  return "unknown";
}

Tier TierFromPriority(int64_t priority) {
  if (priority <= 0) return Tier::kForegroundChat;
  if (priority < 10) return Tier::kInlineSuggestion;
  if (priority < 100) return Tier::kBackgroundSummary;
  return Tier::kOfflineIndexing;
}

Status CheckCompletionDefaults(const CompletionDefaults& defaults) {
  if (defaults.chat_max_tokens < 0 || defaults.completion_max_tokens < 0) {
    return InvalidArgument("default max_tokens must be positive, or 0 for the rest of the context");
  }
  if (defaults.vocab_size < 0) return InvalidArgument("vocab_size must not be negative");
  return Status::Ok();
}

ParsedCompletion ParseCompletionRequest(Endpoint endpoint, std::string_view body_text, std::string_view tier_header,
                                        const CompletionDefaults& defaults) {
  std::variant<json, ApiError> parsed = ParseClientJson(body_text);
  if (ApiError* e = std::get_if<ApiError>(&parsed)) return std::move(*e);
  const json& body = std::get<json>(parsed);
  if (!body.is_object()) return BadRequest("the request body must be a JSON object", "", "invalid_json");
  CompletionRequest r;
  r.endpoint = endpoint;
  const bool chat = endpoint == Endpoint::kChatCompletions;
  if (auto e = chat ? ReadMessages(body, &r.task) : ReadPrompt(body, defaults.vocab_size, &r.task)) return *e;
  if (auto e = ReadCommon(body, &r)) return *e;
  if (chat) {
    if (auto e = ReadTools(body, body_text, &r.task.tools, &r.task.tool_choice)) return *e;
    // "none": the answer is text, so the model is not shown what it may not call.
    if (r.task.tool_choice.kind == ToolChoice::Kind::kNone) r.task.tools.clear();
  }
  if (auto e = RefuseUnsupportedFields(body, endpoint)) return *e;
  if (auto e = ReadLogprobs(body, endpoint, &r)) return *e;
  if (auto e = ReadDurable(body, &r)) return *e;
  if (auto e = ReadResponseFormat(body, body_text, &r.task.constraint)) return *e;
  const ToolChoice::Kind choice = r.task.tool_choice.kind;
  if (r.task.constraint.active() && (choice == ToolChoice::Kind::kRequired || choice == ToolChoice::Kind::kNamed)) {
    return BadRequest("a required tool call and 'response_format' or 'grammar' exclude each other", "tool_choice",
                      "invalid_value");
  }
  const int32_t fallback = chat ? defaults.chat_max_tokens : defaults.completion_max_tokens;
  if (auto e = ReadMaxTokens(body, fallback, &r.task.max_tokens)) return *e;
  if (auto e = ReadTier(body, tier_header, endpoint, &r.task.tier)) return *e;
  return r;
}

}  // namespace valet
