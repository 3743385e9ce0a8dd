#include "sched/chat_renderer.h"

#include <cassert>

namespace valet {

namespace {

constexpr std::string_view kChatMlEndOfTurn = "<|im_end|>";

Status CheckRoles(const std::vector<ChatMessage>& messages) {
  bool any_content = false;
  for (const ChatMessage& m : messages) {
    if (m.role != "user" && m.role != "assistant" && m.role != "system") {
      return InvalidArgument("unknown chat role '" + m.role + "' (expected system, user or assistant)");
    }
    any_content = any_content || !m.content.empty();
  }
  if (!any_content) return InvalidArgument("chat messages are all empty");
  return Status::Ok();
}

Json Message(std::string_view role, std::string_view content) {
  Json m = Json::object();
  m["role"] = std::string(role);
  m["content"] = std::string(content);
  return m;
}

}  // namespace

ChatRenderer ChatRenderer::ForFormat(const ChatFormat& format, ChatRendererOptions options) {
  ChatRenderer r;
  r.format_ = format;
  r.literal_content_ = options.literal_content;
  if (!format.special_texts.empty()) {
    r.special_texts_ = std::make_shared<const chat::SpecialTexts>(format.special_texts);
  }
  if (!format.template_source.empty()) {
    Result<chat::ChatTemplate> parsed = chat::ChatTemplate::Parse(format.template_source);
    if (parsed.ok()) {
      r.template_ = std::make_shared<const chat::ChatTemplate>(std::move(parsed).value());
      r.uses_model_template_ = true;
      return r;
    }
    r.fallback_reason_ = "the model's chat template could not be parsed (" + parsed.status().message() +
                         "); using the built-in ChatML";
  } else {
    r.fallback_reason_ = "the model has no chat template; using the built-in ChatML";
  }
  Result<chat::ChatTemplate> chatml = chat::ChatTemplate::Builtin(chat::kChatMlName);
  assert(chatml.ok() && "the built-in ChatML template parses");
  r.template_ = std::make_shared<const chat::ChatTemplate>(std::move(chatml).value());
  r.stop_strings_ = {std::string(kChatMlEndOfTurn)};
  return r;
}

Result<RenderedPrompt> ChatRenderer::RenderChat(std::string_view system_prompt,
                                                const std::vector<ChatMessage>& messages) const {
  VALET_RETURN_IF_ERROR(CheckRoles(messages));
  chat::ChatRenderInput input;
  input.messages = Json::array();
  if (!system_prompt.empty()) input.messages.push_back(Message("system", system_prompt));
  for (const ChatMessage& m : messages) input.messages.push_back(Message(m.role, m.content));
  input.add_generation_prompt = true;
  input.bos_token = format_.bos_token;
  input.eos_token = format_.eos_token;
  input.special_texts = special_texts_.get();
  input.literal_content = literal_content_;
  VALET_ASSIGN_OR_RETURN(chat::SplitPrompt split, template_->RenderSplit(input));
  // Only a task's own system prompt is shared: a system message inside
  // `messages` belongs to that conversation.
  RenderedPrompt r{std::move(split.shared), std::move(split.own), std::move(split.shared_literal),
                   std::move(split.own_literal)};
  if (!system_prompt.empty()) return r;
  return RenderedPrompt{"", r.shared + r.own, {}, JoinedLiteral(r)};
}

std::vector<ByteRange> JoinedLiteral(const RenderedPrompt& prompt) {
  std::vector<ByteRange> joined = prompt.shared_literal;
  for (const ByteRange& r : prompt.own_literal) joined.push_back({r.begin + prompt.shared.size(), r.length});
  return joined;
}

RenderedPrompt ChatRenderer::RenderRaw(std::string_view system_prompt, std::string_view prompt) {
  RenderedPrompt r;
  if (!system_prompt.empty()) r.shared = std::string(system_prompt) + "\n\n";
  r.own = prompt;
  return r;
}

}  // namespace valet
