#include "chat/chat_template.h"

#include <algorithm>

#include "chat/parser.h"

namespace valet::chat {
namespace {

// ChatML: <|im_start|>role\ncontent<|im_end|>\n per message.
constexpr std::string_view kChatMlSource =
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{{- message['content'] if message['content'] is string else '' -}}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

constexpr size_t kMaxStrftimeBytes = 256;

Value StrftimeNow(std::optional<std::time_t> now) {
  return Value::Callable("strftime_now", [now](const CallArgs& args) -> Result<Value> {
    if (args.positional.empty() || !args.positional[0].is_string()) {
      return InvalidArgument("strftime_now() needs a format string");
    }
    const std::time_t t = now.value_or(std::time(nullptr));
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[kMaxStrftimeBytes];
    const size_t n = std::strftime(buf, sizeof(buf), args.positional[0].AsString().c_str(), &tm);
    return Value::String(std::string(buf, n));
  });
}

}  // namespace

Result<ChatTemplate> ChatTemplate::Parse(std::string_view source, const RenderLimits& limits) {
  VALET_ASSIGN_OR_RETURN(Body body, Parser::Parse(source));
  return ChatTemplate(std::make_shared<const Body>(std::move(body)), limits);
}

Result<ChatTemplate> ChatTemplate::Builtin(std::string_view name) {
  if (name != kChatMlName) return NotFound("no built-in chat template named '" + std::string(name) + "'");
  return Parse(kChatMlSource);
}

Result<std::string> ChatTemplate::Render(const ChatRenderInput& input) const {
  if (!input.messages.is_array()) return InvalidArgument("chat messages must be a JSON array");
  if (!input.variables.is_null() && !input.variables.is_object()) {
    return InvalidArgument("chat template variables must be a JSON object");
  }
  Value::Object vars = {
      {"messages", Value::FromJson(input.messages)},
      {"add_generation_prompt", Value::Bool(input.add_generation_prompt)},
      {"bos_token", Value::String(input.bos_token)},
      {"eos_token", Value::String(input.eos_token)},
      {"strftime_now", StrftimeNow(input.now)},
  };
  if (input.variables.is_object()) {
    for (size_t i = 0; i < input.variables.keys().size(); ++i) {
      vars.emplace_back(input.variables.keys()[i], Value::FromJson(input.variables.items()[i]));
    }
  }
  Interpreter interpreter(limits_);
  return interpreter.Render(*program_, vars);
}

Result<SplitPrompt> ChatTemplate::RenderSplit(const ChatRenderInput& input) const {
  VALET_ASSIGN_OR_RETURN(std::string full, Render(input));
  SplitPrompt split;
  const JsonValue* role = input.messages.size() > 0 ? input.messages[0].Find("role") : nullptr;
  if (role == nullptr || !role->is_string() || role->AsString() != "system") {
    split.own = std::move(full);
    return split;
  }
  ChatRenderInput head = input;
  head.messages = JsonValue::Array({input.messages[0]});
  head.add_generation_prompt = false;
  Result<std::string> system_only = Render(head);
  size_t n = 0;
  if (system_only.ok()) {
    const size_t limit = std::min(full.size(), system_only->size());
    while (n < limit && full[n] == (*system_only)[n]) ++n;
    // Never split a UTF-8 sequence: back off over continuation bytes.
    while (n > 0 && n < full.size() && (static_cast<unsigned char>(full[n]) & 0xC0) == 0x80) --n;
  }
  split.shared = full.substr(0, n);
  split.own = full.substr(n);
  return split;
}

}  // namespace valet::chat
