#include "constrain/tool_call_gbnf.h"

#include <string>
#include <vector>

#include "constrain/gbnf_builder.h"
#include "constrain/grammar_trigger.h"
#include "constrain/json_terms_gbnf.h"
#include "constrain/utf8_ranges.h"

namespace valet {
namespace {

Status Bad(const std::string& what) { return InvalidArgument(Concat({"tool call constraint: ", what})); }

Result<ToolSchema> ReadTool(const Json& tool, size_t index) {
  const std::string at = "tools[" + std::to_string(index) + "]";
  if (!tool.is_object()) return Bad(at + " is not an object");
  const Json* name = FindMember(tool, "name");
  if (name == nullptr || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return Bad(at + ".name is not a non-empty string");
  }
  ToolSchema out{name->get<std::string>(), Json{{"type", "object"}}};
  if (const Json* parameters = FindMember(tool, "parameters"); parameters != nullptr) {
    if (!parameters->is_object()) return Bad(at + ".parameters is not an object");
    out.parameters = *parameters;
  }
  return out;
}

// A bare-object family: the calls, or text that does not open (after
// whitespace) with '{', which would read as a call.
std::string BareTextOrCalls(GbnfBuilder& b, const std::string& calls) {
  const std::string any = GbnfClass(NormalizeRanges({}, /*negate=*/true));
  const std::string opening = GbnfClass(NormalizeRanges({{'{', '{'}, {' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}},
                                                        /*negate=*/true));
  const std::string tail = b.Reserve("text-tail");
  b.Define(tail, Concat({"\"\" | ", any, " ", tail}));
  const std::string text = b.Reserve("text");
  b.Define(text, Concat({"\"\" | [ \\t\\n\\r] ", text, " | ", opening, " ", tail}));
  return Concat({calls, " | ", text});
}

}  // namespace

Result<ToolCallSpec> ParseToolCallSpec(std::string_view text, const JsonSchemaOptions& options) {
  if (text.size() > options.max_schema_bytes) {
    return OutOfRange("tool call constraint: larger than " + std::to_string(options.max_schema_bytes) + " bytes");
  }
  Result<Json> parsed = ParseJson(text, options.max_depth);
  if (!parsed.ok()) return Bad(parsed.status().message());
  if (!parsed->is_object()) return Bad("not a JSON object");
  ToolCallSpec spec;
  for (std::string_view f : kToolCallSyntaxFields) {
    const Json* v = FindMember(*parsed, f);
    if (v == nullptr) continue;
    if (!v->is_string()) return Bad(Concat({"'", f, "' is not a string"}));
    ToolCallSyntaxField(spec.syntax, f) = v->get<std::string>();
  }
  if (spec.syntax.name_key.empty() || spec.syntax.arguments_key.empty()) return Bad("an empty key name");
  if (const Json* t = FindMember(*parsed, "text_allowed"); t != nullptr) {
    if (!t->is_boolean()) return Bad("'text_allowed' is not a boolean");
    spec.text_allowed = t->get<bool>();
  }
  if (const Json* m = FindMember(*parsed, "max_calls"); m != nullptr) {
    if (!m->is_number_integer() || m->get<int64_t>() < 1 || m->get<int64_t>() > kMaxToolCallsPerTurn) {
      return Bad("'max_calls' is not 1.." + std::to_string(kMaxToolCallsPerTurn));
    }
    spec.max_calls = static_cast<uint32_t>(m->get<int64_t>());
  }
  const Json* tools = FindMember(*parsed, "tools");
  if (tools == nullptr || !tools->is_array() || tools->empty()) return Bad("'tools' is not a non-empty array");
  for (size_t i = 0; i < tools->size(); ++i) {
    VALET_ASSIGN_OR_RETURN(ToolSchema t, ReadTool((*tools)[i], i));
    spec.tools.push_back(std::move(t));
  }
  return spec;
}

Result<std::string> ToolCallsToGbnf(const ToolCallSpec& spec, const JsonSchemaOptions& options) {
  if (spec.tools.empty()) return Bad("no tools");
  const ToolCallSyntax& s = spec.syntax;
  const std::string_view marker = ToolCallMarker(s);
  const std::string_view lead = s.prefix.empty() ? s.call_prefix : s.prefix;
  if (spec.text_allowed && (lead.substr(0, marker.size()) != marker || marker.size() > kMaxTriggerBytes)) {
    return Bad("with text allowed, calls begin with their marker: at most " + std::to_string(kMaxTriggerBytes) +
               " bytes at the start of the prefix (or of the call prefix)");
  }
  GbnfBuilder b;
  JsonTerms terms(b, options.max_whitespace);
  const std::string name_head = GbnfLiteral(Concat({"{", DumpJson(Json(s.name_key)), ": "}));
  const std::string arguments_head = GbnfLiteral(Concat({", ", DumpJson(Json(s.arguments_key)), ": "}));
  std::string calls;
  for (const ToolSchema& t : spec.tools) {
    Result<std::string> arguments = AddJsonSchemaRules(t.parameters, options, b, terms);
    if (!arguments.ok()) {
      return Status(arguments.status().code(), "tool " + t.name + ": " + arguments.status().message());
    }
    const std::string call = b.Add("call", Concat({name_head, " ", GbnfLiteral(DumpJson(Json(t.name))), " ",
                                                   arguments_head, " ", *arguments, " ", GbnfLiteral("}")}));
    calls += calls.empty() ? call : Concat({" | ", call});
  }
  const std::string call = b.Add("call-body", Concat({"(", calls, ")"}));
  const std::string one = b.Add("one-call", Concat({GbnfLiteral(s.call_prefix), " ", call, " ",
                                                    GbnfLiteral(s.call_suffix)}));
  terms.DefineWhitespace();
  std::string rest;  // after the first call
  if (spec.max_calls > 1) {
    rest = Concat({"(", GbnfLiteral(s.separator), " ", one, "){0,", std::to_string(spec.max_calls - 1), "} "});
  }
  rest += GbnfLiteral(s.suffix);
  if (!spec.text_allowed) return b.Text(Concat({GbnfLiteral(s.prefix), " ", one, " ", rest}));
  // From the marker on: what is left of the prefix, or of the first call's.
  const std::string after = b.Add(
      "calls", s.prefix.empty()
                   ? Concat({GbnfLiteral(s.call_prefix.substr(marker.size())), " ", call, " ",
                             GbnfLiteral(s.call_suffix), " ", rest})
                   : Concat({GbnfLiteral(s.prefix.substr(marker.size())), " ", one, " ", rest}));
  return b.Text(marker.empty() ? BareTextOrCalls(b, after) : after);
}

std::string ToolCallTrigger(const ToolCallSpec& spec) {
  return spec.text_allowed ? std::string(ToolCallMarker(spec.syntax)) : std::string();
}

}  // namespace valet
