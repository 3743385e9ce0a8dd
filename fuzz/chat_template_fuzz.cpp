// libFuzzer target for the chat-template engine: any input is a template
// source that must parse or fail with an error, and a parsed template must
// render a fixed conversation or fail with an error, within the render
// limits, never crash or hang. Seed it with ../shared/chat-templates:
//   build-fuzz/fuzz/chat_template_fuzz -max_len=20000 -timeout=10 work/ ../shared/chat-templates
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chat/chat_template.h"

namespace {

void Check(bool cond) {
  if (!cond) __builtin_trap();
}

const valet::chat::ChatRenderInput& Conversation() {
  static const valet::chat::ChatRenderInput* input = [] {
    auto* in = new valet::chat::ChatRenderInput;
    in->messages = *valet::ParseJson(R"([
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Hi \u00e9 \ud83d\ude42"},
      {"role": "assistant", "content": "<think>x</think>ok", "tool_calls": [
        {"id": "abcdefghi", "type": "function", "function": {"name": "f", "arguments": {"a": 1, "b": [true, null]}}}]},
      {"role": "tool", "content": "42", "tool_call_id": "abcdefghi"},
      {"role": "user", "content": "again"}])");
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
  return 0;
}
