#include "sched/chat_template.h"

namespace valet {

namespace {

std::string SharedPart(std::string_view system_prompt) {
  if (system_prompt.empty()) return {};
  std::string s(system_prompt);
  s += "\n\n";
  return s;
}

}  // namespace

Result<RenderedPrompt> RenderChat(std::string_view system_prompt, const std::vector<ChatMessage>& messages) {
  RenderedPrompt out;
  out.shared = SharedPart(system_prompt);
  bool any_content = false;
  for (const ChatMessage& m : messages) {
    const char* label = nullptr;
    if (m.role == "user") {
      label = "User: ";
    } else if (m.role == "assistant") {
      label = "Assistant: ";
    } else if (m.role == "system") {
      label = "System: ";
    } else {
      return InvalidArgument("unknown chat role '" + m.role + "' (expected system, user or assistant)");
    }
    any_content = any_content || !m.content.empty();
    out.own += label;
    out.own += m.content;
    out.own += '\n';
  }
  if (!any_content) return InvalidArgument("chat messages are all empty");
  out.own += "Assistant:";
  return out;
}

RenderedPrompt RenderRaw(std::string_view system_prompt, std::string_view prompt) {
  return {SharedPart(system_prompt), std::string(prompt)};
}

}  // namespace valet
