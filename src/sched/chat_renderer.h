// The plain chat template the scheduler renders chat messages with:
//
//   <system prompt>\n\n            <- shared prefix (BOS first), KV shared
//   User: <content>\n              <- one line per message: "User:",
//   Assistant: <content>\n            "Assistant:" or "System:" + content
//   Assistant:                     <- the model continues from here
//
// "\nUser:" is added as a stop string so the model's answer ends before it
// would write the next user turn. Model-specific templates are out of scope:
// the format only needs to be stable so the system prompt's KV can be shared.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "valet/scheduler.h"

namespace valet {

inline constexpr std::string_view kChatStopString = "\nUser:";

struct RenderedPrompt {
  std::string shared;  // the system prompt part; empty without one
  std::string own;     // the rest
};

// InvalidArgument on an unknown role or when nothing would be prompted.
Result<RenderedPrompt> RenderChat(std::string_view system_prompt, const std::vector<ChatMessage>& messages);
// A raw prompt, optionally after a shared system prompt (rendered as above).
RenderedPrompt RenderRaw(std::string_view system_prompt, std::string_view prompt);

}  // namespace valet
