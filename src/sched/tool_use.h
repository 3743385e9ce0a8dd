// How a chat task that offers tools may use them: the syntax its answer is
// read in (the model family's, chat/tool_calls.h), the constraint it is
// generated under, and the answer read back into calls
// (TaskResult::tool_calls). The server streams with the same syntax.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/tool_call_syntax.h"
#include "valet/constraint.h"
#include "valet/status.h"
#include "valet/task.h"

namespace valet {

struct ToolAnswer {
  std::string content;          // all of the text when there are no calls
  std::vector<ToolCall> calls;  // each with a fresh id (9 letters and digits, as Mistral's template wants)
};

// The family's syntax with the calls one answer under `choice` may hold.
ToolCallSyntax AnswerSyntax(const ToolCallSyntax& family, const ToolChoice& choice);

class ToolUse {
 public:
  // nullopt for a request that offers no tools or chooses kNone.
  // InvalidArgument: a call required of no tools, a named tool the request
  // does not offer, a required call beside the request's own constraint.
  static Result<std::optional<ToolUse>> Plan(const ToolCallSyntax& family, const TaskRequest& request);

  const ToolCallSyntax& syntax() const { return syntax_; }
  // The kToolCall constraint the answer is generated under: the calls, or
  // for kAuto text until the family's marker and calls from there, so a call
  // the model chooses follows its tool's schema too. Inactive when the
  // request has its own constraint (kAuto only).
  const Constraint& constraint() const { return constraint_; }
  // The answer's calls, when it reads as calls of offered tools only.
  ToolAnswer Read(std::string_view text) const;

 private:
  ToolCallSyntax syntax_;
  std::vector<std::string> names_;  // the tools offered
  Constraint constraint_;
};

}  // namespace valet
