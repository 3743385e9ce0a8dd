#include "server/tool_reply.h"

#include <random>

#include "chat/tool_calls.h"
#include "common/json.h"
#include "constrain/tool_call_gbnf.h"

namespace valet {
namespace {

constexpr std::string_view kSpace = " \t\r\n";

// Where the text that may begin a call starts, for families that mark calls.
std::string_view Marker(const ToolCallSyntax& s) {
  std::string_view m = !s.prefix.empty() ? s.prefix : s.call_prefix;
  while (!m.empty() && (m.back() == '[' || kSpace.find(m.back()) != std::string_view::npos)) m.remove_suffix(1);
  return m;
}

std::string FreshCallId() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id(9, ' ');
  for (char& c : id) c = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  return id;
}

}  // namespace

std::optional<ApiError> PrepareToolCalls(const ToolCallSyntax& family, CompletionRequest* request,
                                         std::optional<ToolCallSyntax>* syntax) {
  syntax->reset();
  const ToolChoice& choice = request->tool_choice;
  TaskRequest& task = request->task;
  if (choice.kind == ToolChoice::Kind::kNone || task.tools.empty()) return std::nullopt;
  ToolCallSyntax s = family;
  if (!choice.parallel) s.max_calls = 1;
  *syntax = s;
  if (choice.kind == ToolChoice::Kind::kAuto) return std::nullopt;
  if (task.constraint.active()) {
    return BadRequest("a required tool call and 'response_format' or 'grammar' exclude each other", "tool_choice",
                      "invalid_value");
  }
  ToolCallSpec spec;
  spec.syntax = s;
  spec.max_calls = s.max_calls;
  for (const ToolDefinition& t : task.tools) {
    if (choice.kind == ToolChoice::Kind::kNamed && t.name != choice.name) continue;
    Json parameters = Json{{"type", "object"}};
    if (!t.parameters.empty()) {
      Result<Json> parsed = ParseJson(t.parameters);
      if (!parsed.ok()) return BadRequest(parsed.status().message(), "tools", "invalid_value");
      parameters = std::move(parsed).value();
    }
    spec.tools.push_back({t.name, std::move(parameters)});
  }
  task.constraint = {ConstraintKind::kToolCall, ToolCallSpecText(spec), 0};
  return std::nullopt;
}

ToolAnswer ReadToolAnswer(std::string_view text, const ToolCallSyntax& syntax, const std::vector<ToolDefinition>& tools) {
  ParsedToolCalls parsed = ParseToolCalls(text, syntax);
  ToolAnswer answer{std::string(text), {}};
  for (const ParsedCall& c : parsed.calls) {
    bool offered = false;
    for (const ToolDefinition& t : tools) offered = offered || t.name == c.name;
    if (!offered) return answer;
  }
  answer.content = std::move(parsed.content);
  for (ParsedCall& c : parsed.calls) answer.calls.push_back({FreshCallId(), std::move(c.name), std::move(c.arguments)});
  return answer;
}

std::string ToolCallStream::Push(std::string_view piece) {
  text_ += piece;
  if (held_) return {};
  const std::string_view marker = Marker(syntax_);
  size_t safe = text_.size();
  if (marker.empty()) {
    // A bare-object family: the answer is a call only if it opens with '{'.
    const size_t first = text_.find_first_not_of(kSpace);
    if (first == std::string::npos) return {};
    if (text_[first] == '{') {
      held_ = true;
      return {};  // nothing was shown before: the leading whitespace is the call's
    }
  } else if (const size_t at = text_.find(marker); at != std::string::npos) {
    held_ = true;
    safe = at;
  } else {
    // Hold back a tail that may be the marker's first bytes.
    for (size_t n = std::min(marker.size() - 1, text_.size()); n > 0; --n) {
      if (std::string_view(text_).substr(text_.size() - n) == marker.substr(0, n)) {
        safe = text_.size() - n;
        break;
      }
    }
  }
  if (safe <= shown_) return {};
  std::string out = text_.substr(shown_, safe - shown_);
  shown_ = safe;
  return out;
}

}  // namespace valet
