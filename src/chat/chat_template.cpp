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

// The largest cut at or before n that no special text occurrence straddles.
size_t CutOutsideSpecialTexts(std::string_view text, size_t n, const SpecialTexts& texts) {
  for (bool moved = true; moved && n > 0;) {
    moved = false;
    for (size_t i = n > texts.max_length() ? n - texts.max_length() : 0; i < n; ++i) {
      if (i + texts.LongestMatchAt(text, i) > n) {
        n = i;
        moved = true;
        break;
      }
    }
  }
  return n;
}

// `full` cut at byte n, its literal ranges cut with it.
SplitPrompt SplitAt(LiteralText full, size_t n) {
  SplitPrompt split;
  split.shared = full.text.substr(0, n);
  split.own = full.text.substr(n);
  for (const ByteRange& r : full.literal) {
    if (r.begin < n) split.shared_literal.push_back({r.begin, std::min(r.end(), n) - r.begin});
    if (r.end() > n) {
      const size_t begin = std::max(r.begin, n);
      split.own_literal.push_back({begin - n, r.end() - begin});
    }
  }
  return split;
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

Result<std::string> ChatTemplate::RenderEscaped(const ChatRenderInput& input, ContentEscaper* escaper) const {
  if (!input.messages.is_array()) return InvalidArgument("chat messages must be a JSON array");
  if (!input.variables.is_null() && !input.variables.is_object()) {
    return InvalidArgument("chat template variables must be a JSON object");
  }
  Value::Object vars = {
      {"messages", Value::FromJson(escaper != nullptr ? escaper->EscapeMessages(input.messages) : input.messages)},
      {"add_generation_prompt", Value::Bool(input.add_generation_prompt)},
      {"bos_token", Value::String(input.bos_token)},
      {"eos_token", Value::String(input.eos_token)},
      {"strftime_now", StrftimeNow(input.now)},
  };
  if (input.variables.is_object()) {
    for (const auto& [key, value] : input.variables.items()) {
      vars.emplace_back(key, Value::FromJson(value));
    }
  }
  Interpreter interpreter(limits_);
  return interpreter.Render(*program_, vars);
}

Result<std::string> ChatTemplate::Render(const ChatRenderInput& input) const {
  VALET_ASSIGN_OR_RETURN(LiteralText rendered, RenderLiteral(input));
  return std::move(rendered.text);
}

Result<LiteralText> ChatTemplate::RenderLiteral(const ChatRenderInput& input) const {
  if (input.special_texts == nullptr || !input.literal_content) {
    VALET_ASSIGN_OR_RETURN(std::string text, RenderEscaped(input, nullptr));
    return LiteralText{std::move(text), {}};
  }
  ContentEscaper escaper(*input.special_texts);
  VALET_ASSIGN_OR_RETURN(std::string escaped, RenderEscaped(input, &escaper));
  return escaper.Restore(escaped);
}

Result<SplitPrompt> ChatTemplate::RenderSplit(const ChatRenderInput& input) const {
  VALET_ASSIGN_OR_RETURN(LiteralText full, RenderLiteral(input));
  const bool system_first = input.messages.is_array() && !input.messages.empty() &&
                            input.messages[0].is_object() && input.messages[0].value("role", Json()) == "system";
  size_t n = 0;
  if (system_first) {
    ChatRenderInput head = input;
    head.messages = Json::array({input.messages[0]});
    head.add_generation_prompt = false;
    if (Result<LiteralText> system_only = RenderLiteral(head); system_only.ok()) {
      const std::string& text = system_only->text;
      const size_t limit = std::min(full.text.size(), text.size());
      while (n < limit && full.text[n] == text[n]) ++n;
      // Never split a UTF-8 sequence: back off over continuation bytes.
      while (n > 0 && n < full.text.size() && (static_cast<unsigned char>(full.text[n]) & 0xC0) == 0x80) --n;
      if (input.special_texts != nullptr) n = CutOutsideSpecialTexts(full.text, n, *input.special_texts);
    }
  }
  return SplitAt(std::move(full), n);
}

}  // namespace valet::chat
