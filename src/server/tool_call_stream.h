// A streamed chat answer that may call tools: the text held back while it
// may still become a call, so a client never sees a call's markup as content
// (the calls come whole at the end, TaskResult::tool_calls).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "common/tool_call_syntax.h"

namespace valet {

// A stream's text, held back from where a call may begin: after a call
// marker's first bytes (<tool_call>, [TOOL_CALLS], ...), or, for a family
// that answers a call with a bare JSON object, from a first '{'.
class ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallSyntax syntax) : syntax_(std::move(syntax)) {}
  // The part of text so far that is surely not a call and not yet shown.
  std::string Push(std::string_view text);
  const std::string& text() const { return text_; }
  size_t shown() const { return shown_; }

 private:
  ToolCallSyntax syntax_;
  std::string text_;
  size_t shown_ = 0;
  bool held_ = false;  // a call may have begun: nothing more is shown
};

}  // namespace valet
