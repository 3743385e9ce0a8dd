// A model's chat template: the Jinja source from a GGUF's
// `tokenizer.chat_template` (as Hugging Face ships it), parsed once and
// rendered per conversation with valet's own Jinja subset (chat/parser.h,
// chat/interpreter.h). Renders match Hugging Face's reference renderer byte
// for byte on the templates in ../shared/chat-templates. Models without a
// template fall back to the named built-in "chatml".
//
// A parsed template is immutable and may be rendered from several threads.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/ast.h"
#include "chat/interpreter.h"
#include "chat/literal_content.h"
#include "common/json.h"
#include "valet/byte_range.h"
#include "valet/status.h"

namespace valet::chat {

inline constexpr std::string_view kChatMlName = "chatml";

struct ChatRenderInput {
  Json messages;  // an array of {"role": ..., "content": ..., any other keys}
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  Json variables;  // an object of extra template variables (tools, date_string, ...), or null
  // What strftime_now() formats (as UTC); unset: the current time.
  std::optional<std::time_t> now;
  // The vocabulary's control-token texts (not owned, must outlive the render):
  // RenderSplit never cuts through one, and with literal_content they stay text
  // in message content (chat/literal_content.h), reported as literal ranges.
  const SpecialTexts* special_texts = nullptr;
  bool literal_content = false;
};

// A render cut where a conversation's reusable head ends.
struct SplitPrompt {
  std::string shared;  // what every conversation with the same system message starts with
  std::string own;     // the rest; shared + own is the full render
  // With ChatRenderInput::literal_content: where content's special texts are, in
  // `shared` and in `own` (a range the cut crosses is cut with it).
  std::vector<ByteRange> shared_literal;
  std::vector<ByteRange> own_literal;
};

class ChatTemplate {
 public:
  // InvalidArgument naming the line on a syntax error, unknown tag, filter or test.
  static Result<ChatTemplate> Parse(std::string_view source, const RenderLimits& limits = {});
  // A built-in template by name ("chatml"); NotFound for other names.
  static Result<ChatTemplate> Builtin(std::string_view name);

  // The prompt text. The template's raise_exception(msg) gives InvalidArgument
  // with exactly `msg`; other failures name the template line.
  Result<std::string> Render(const ChatRenderInput& input) const;
  // Render() with the literal ranges of input.literal_content (none without it).
  Result<LiteralText> RenderLiteral(const ChatRenderInput& input) const;

  // Render() split for prefix caching: `shared` is the longest common prefix
  // of the full render and a render of the leading system message alone
  // (without the generation prompt), cut back to a UTF-8 boundary, so its KV
  // can be shared across conversations. Templates that fold the system
  // message into a later turn share only what precedes it (often just BOS).
  // Without a leading system message, or when the template refuses a
  // system-only conversation, `shared` is empty. The cut never falls inside
  // one of input.special_texts: a control token's text cut in two would be
  // two runs of plain text.
  Result<SplitPrompt> RenderSplit(const ChatRenderInput& input) const;

 private:
  ChatTemplate(std::shared_ptr<const Body> program, const RenderLimits& limits)
      : program_(std::move(program)), limits_(limits) {}

  Result<std::string> RenderEscaped(const ChatRenderInput& input, ContentEscaper* escaper) const;

  std::shared_ptr<const Body> program_;
  RenderLimits limits_;
};

}  // namespace valet::chat
