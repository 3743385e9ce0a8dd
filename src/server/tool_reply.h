// A chat answer that may call tools: the constraint a required or named call
// is generated under, the answer read back into text and calls, and, for a
// stream, the text held back while it may still become a call.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/tool_call_syntax.h"
#include "server/completion_request.h"

namespace valet {

// For a request whose answer may call tools (tool_choice auto, required or
// named): `family` (the syntax the model's family writes calls in) with this
// request's call count; a required or named
// call also becomes the task's constraint (the call's arguments then always
// follow the tool's parameters). nullopt syntax: the answer is plain text.
// A 400 when response_format already constrains a required call.
std::optional<ApiError> PrepareToolCalls(const ToolCallSyntax& family, CompletionRequest* request,
                                         std::optional<ToolCallSyntax>* syntax);

struct ToolAnswer {
  std::string content;          // all of the text when there are no calls
  std::vector<ToolCall> calls;  // each with a fresh id (9 letters and digits, as Mistral's template wants)
};

// The answer's calls, when it reads as calls of offered tools only.
ToolAnswer ReadToolAnswer(std::string_view text, const ToolCallSyntax& syntax, const std::vector<ToolDefinition>& tools);

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
