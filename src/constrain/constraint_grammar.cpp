#include "constrain/constraint_grammar.h"

#include <cstring>

#include "constrain/json_schema_gbnf.h"
#include "constrain/regex_gbnf.h"
#include "constrain/tool_call_gbnf.h"

namespace valet {
namespace {

constexpr const char* kKindNames[] = {"none", "json_schema", "json_object", "grammar", "regex", "tool_call"};

}  // namespace

const char* ConstraintKindName(ConstraintKind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < std::size(kKindNames) ? kKindNames[i] : "unknown";
}

Result<ConstraintKind> ConstraintKindFromName(const char* name) {
  for (size_t i = 0; name != nullptr && i < std::size(kKindNames); ++i) {
    if (std::strcmp(name, kKindNames[i]) == 0) return static_cast<ConstraintKind>(i);
  }
  return InvalidArgument(std::string("unknown constraint kind '") + (name ? name : "(null)") +
                         "' (none, json_schema, json_object, grammar, regex, tool_call)");
}

Result<ConstraintGrammar> ConstraintToGbnf(const Constraint& c,
                                           const GrammarLimits& user_grammar_limits) {
  if (c.max_whitespace > kMaxConstraintWhitespace) {
    return OutOfRange("constraint: max_whitespace above " +
                      std::to_string(kMaxConstraintWhitespace));
  }
  JsonSchemaOptions json;
  json.max_whitespace = c.max_whitespace;
  switch (c.kind) {
    case ConstraintKind::kNone:
      return InvalidArgument("constraint: no constraint to compile");
    case ConstraintKind::kGrammar:
      return ConstraintGrammar{c.text, user_grammar_limits};
    case ConstraintKind::kJsonObject:
      return ConstraintGrammar{JsonObjectGbnf(json), JsonSchemaGrammarLimits(json)};
    case ConstraintKind::kJsonSchema: {
      VALET_ASSIGN_OR_RETURN(std::string gbnf, JsonSchemaToGbnf(c.text, json));
      return ConstraintGrammar{std::move(gbnf), JsonSchemaGrammarLimits(json)};
    }
    case ConstraintKind::kToolCall: {
      VALET_ASSIGN_OR_RETURN(ToolCallSpec spec, ParseToolCallSpec(c.text, json));
      VALET_ASSIGN_OR_RETURN(std::string gbnf, ToolCallsToGbnf(spec, json));
      return ConstraintGrammar{std::move(gbnf), JsonSchemaGrammarLimits(json), ToolCallTrigger(spec)};
    }
    case ConstraintKind::kRegex: {
      GbnfBuilder b;
      VALET_ASSIGN_OR_RETURN(std::string expr, RegexToGbnf(c.text, RegexOptions{}, b));
      return ConstraintGrammar{b.Text(expr), user_grammar_limits};
    }
  }
  return InvalidArgument("constraint: unknown kind");
}

}  // namespace valet
