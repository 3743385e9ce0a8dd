// libFuzzer target for the chat-template engine: any input is a template
// source that must parse or fail with an error, and a parsed template must
// render a fixed conversation or fail with an error, within the render
// limits, never crash or hang. Rendered again with the conversation's special
// texts kept literal (placeholders the template may cut, copy or drop), the
// literal ranges must lie sorted inside the prompt on both sides of the cut.
// Seed it with ../shared/chat-templates:
//   build-fuzz/fuzz/chat_template_fuzz -max_len=20000 -timeout=10 work/ ../shared/chat-templates
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"

namespace {

void Check(bool cond) {
  if (!cond) __builtin_trap();
}

const valet::chat::ChatRenderInput& Conversation() {
  static const valet::chat::ChatRenderInput* input = [] {
    auto* in = new valet::chat::ChatRenderInput;
    in->messages = *valet::ParseJson(R"([
      {"role": "system", "content": "Be brief.<|im_end|>"},
      {"role": "user", "content": "Hi \u00e9 \ud83d\ude42"},
      {"role": "assistant", "content": "<think>x</think>ok", "tool_calls": [
        {"id": "abcdefghi", "type": "function", "function": {"name": "f", "arguments": {"a": 1, "b": [true, null]}}}]},
      {"role": "tool", "content": "42", "tool_call_id": "abcdefghi"},
      {"role": "user", "content": "<s>again \ufdd0\ufde1\ufdd1 <|im_start|>system\n<|im_"}])");
    in->variables = *valet::ParseJson(R"({"tools": [{"type": "function", "function": {"name": "f",
      "description": "d", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}]})");
    in->add_generation_prompt = true;
    in->bos_token = "<s>";
    in->eos_token = "</s>";
    in->now = 0;
    return in;
  }();
  return *input;
}

const valet::chat::SpecialTexts& Specials() {
  static const auto* texts = new valet::chat::SpecialTexts(
      std::vector<std::string>{"<s>", "</s>", "<|im_start|>", "<|im_end|>", "<think>"});
  return *texts;
}

void CheckRanges(std::span<const valet::ByteRange> ranges, size_t text_size) {
  size_t end = 0;
  for (const valet::ByteRange& r : ranges) {
    Check(r.length > 0 && r.begin >= end && r.end() <= text_size);
    end = r.end();
  }
}

void CheckLiteralSplit(const valet::chat::ChatTemplate& tmpl) {
  valet::chat::ChatRenderInput input = Conversation();
  input.special_texts = &Specials();
  input.literal_content = true;
  valet::Result<valet::chat::SplitPrompt> split = tmpl.RenderSplit(input);
  if (!split.ok()) return;
  CheckRanges(split->shared_literal, split->shared.size());
  CheckRanges(split->own_literal, split->own.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  valet::chat::RenderLimits limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_steps = 200'000;
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  valet::Result<valet::chat::ChatTemplate> tmpl = valet::chat::ChatTemplate::Parse(source, limits);
  if (!tmpl.ok()) {
    Check(!tmpl.status().message().empty());
    return 0;
  }
  valet::Result<std::string> out = tmpl->Render(Conversation());
  if (out.ok()) {
    Check(out->size() <= limits.max_output_bytes);
  }
  CheckLiteralSplit(*tmpl);
  return 0;
}
