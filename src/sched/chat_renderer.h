// How the scheduler turns a task's system prompt and chat messages into
// prompt text: with the model's own chat template (GGUF
// tokenizer.chat_template, rendered by valet's Jinja engine in chat/), or the
// built-in ChatML for models without one. The render is split so that the
// part every conversation with the same system prompt starts with becomes the
// shared prefix whose KV is computed once and reused. Message content is text:
// the render reports where content's special-token texts lie, so that only
// the template's markup becomes control tokens (chat/literal_content.h).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"
#include "chat/tool_calls.h"
#include "engine/engine_interface.h"
#include "valet/scheduler.h"

namespace valet {

struct RenderedPrompt {
  std::string shared;  // the system prompt's part; empty without one
  std::string own;     // the rest, ending with the assistant's generation prompt for chats
  // Where special-token texts typed in message content are, in `shared` and in
  // `own`: tokenize with these as TokenizeOptions::literal. Empty for raw prompts.
  std::vector<ByteRange> shared_literal;
  std::vector<ByteRange> own_literal;
};

// The literal ranges of shared + own as one text.
std::vector<ByteRange> JoinedLiteral(const RenderedPrompt& prompt);

struct ChatRendererOptions {
  // Keep ChatFormat::special_texts in message content literal. Off: content's
  // special texts become control tokens, as the whole render tokenized
  // with special tokens parsed (SchedulerOptions::parse_special_in_messages).
  bool literal_content = true;
};

class ChatRenderer {
 public:
  // Parses format.template_source once. A model without a template, or with
  // one valet's Jinja subset cannot parse, gets the built-in ChatML, and
  // fallback_reason() says why.
  static ChatRenderer ForFormat(const ChatFormat& format, ChatRendererOptions options = {});

  // InvalidArgument for an unknown role, all-empty messages, a tool call or
  // tool that is not well formed, or when the template refuses the
  // conversation (its raise_exception message). Tools reach the template as
  // its `tools` variable and tool calls as each message's `tool_calls`, in
  // the form Hugging Face's templates read (arguments as an object).
  Result<RenderedPrompt> RenderChat(std::string_view system_prompt, const std::vector<ChatMessage>& messages,
                                    std::span<const ToolDefinition> tools = {}) const;
  // A raw prompt after an optional plain-text system prompt ("S\n\n").
  static RenderedPrompt RenderRaw(std::string_view system_prompt, std::string_view prompt);

  // Stop strings a chat needs beyond the end-of-generation tokens: the
  // built-in ChatML's end-of-turn text, which a vocabulary without
  // "<|im_end|>" as one token only produces piece by piece.
  const std::vector<std::string>& stop_strings() const { return stop_strings_; }
  bool uses_model_template() const { return uses_model_template_; }
  // How the model's family writes tool calls (the generic syntax, which
  // valet describes to the model itself, when the template shows no tools).
  const ToolCallSyntax& tool_syntax() const { return tool_syntax_; }
  const std::string& fallback_reason() const { return fallback_reason_; }

 private:
  ChatRenderer() = default;

  std::shared_ptr<const chat::ChatTemplate> template_;  // immutable: safe to render from any thread
  std::shared_ptr<const chat::SpecialTexts> special_texts_;  // null: the format names none
  bool literal_content_ = true;
  ChatFormat format_;
  std::vector<std::string> stop_strings_;
  bool uses_model_template_ = false;
  ToolCallSyntax tool_syntax_ = ToolCallSyntaxForTemplate("");
  std::string fallback_reason_;
};

}  // namespace valet
