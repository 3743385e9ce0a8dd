#include "sched/tool_use.h"

#include <algorithm>
#include <random>
#include <utility>

#include "chat/tool_calls.h"
#include "common/json.h"

namespace valet {
namespace {

std::string FreshCallId() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id(9, ' ');
  for (char& c : id) c = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  return id;
}

// The kToolCall constraint text of the tools a call may name (under kAuto
// after text, from the family's marker on).
Result<std::string> CallSpecText(const ToolCallSyntax& syntax, const TaskRequest& request) {
  ToolCallSpec spec;
  spec.syntax = syntax;
  spec.max_calls = syntax.max_calls;
  spec.text_allowed = request.tool_choice.kind == ToolChoice::Kind::kAuto;
  for (const ToolDefinition& t : request.tools) {
    if (request.tool_choice.kind == ToolChoice::Kind::kNamed && t.name != request.tool_choice.name) continue;
    Json parameters = Json{{"type", "object"}};
    if (!t.parameters.empty()) {
      VALET_ASSIGN_OR_RETURN(parameters, ParseJson(t.parameters));
    }
    spec.tools.push_back({t.name, std::move(parameters)});
  }
  return ToolCallSpecText(spec);
}

}  // namespace

ToolCallSyntax AnswerSyntax(const ToolCallSyntax& family, const ToolChoice& choice) {
  ToolCallSyntax s = family;
  if (!choice.parallel) s.max_calls = 1;
  return s;
}

Result<std::optional<ToolUse>> ToolUse::Plan(const ToolCallSyntax& family, const TaskRequest& request) {
  const ToolChoice& choice = request.tool_choice;
  const bool calls_required = choice.kind == ToolChoice::Kind::kRequired || choice.kind == ToolChoice::Kind::kNamed;
  if (request.tools.empty()) {
    if (calls_required) return InvalidArgument("tool_choice asks for a call but the task offers no tools");
    return std::optional<ToolUse>();
  }
  if (choice.kind == ToolChoice::Kind::kNone) return std::optional<ToolUse>();
  ToolUse use;
  use.syntax_ = AnswerSyntax(family, choice);
  for (const ToolDefinition& t : request.tools) use.names_.push_back(t.name);
  if (choice.kind == ToolChoice::Kind::kNamed &&
      std::find(use.names_.begin(), use.names_.end(), choice.name) == use.names_.end()) {
    return InvalidArgument("tool_choice names '" + choice.name + "', which is not among the task's tools");
  }
  if (request.constraint.active()) {
    if (calls_required) {
      return InvalidArgument("a required tool call is generated under its tools' schemas: it excludes a constraint");
    }
    return std::optional<ToolUse>(std::move(use));  // the request's own constraint decides the answer
  }
  VALET_ASSIGN_OR_RETURN(std::string text, CallSpecText(use.syntax_, request));
  use.constraint_ = {ConstraintKind::kToolCall, std::move(text), 0};
  return std::optional<ToolUse>(std::move(use));
}

ToolAnswer ToolUse::Read(std::string_view text) const {
  ParsedToolCalls parsed = ParseToolCalls(text, syntax_);
  ToolAnswer answer{std::string(text), {}};
  for (const ParsedCall& c : parsed.calls) {
    if (std::find(names_.begin(), names_.end(), c.name) == names_.end()) return answer;
  }
  answer.content = std::move(parsed.content);
  for (ParsedCall& c : parsed.calls) answer.calls.push_back({FreshCallId(), std::move(c.name), std::move(c.arguments)});
  return answer;
}

}  // namespace valet
