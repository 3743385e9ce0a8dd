#include "constrain/tool_call_gbnf.h"

#include <string>

#include "constrain/gbnf_builder.h"
#include "constrain/json_terms_gbnf.h"

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
  GbnfBuilder b;
  JsonTerms terms(b, options.max_whitespace);
  const ToolCallSyntax& s = spec.syntax;
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
  const std::string one = b.Add("one-call", Concat({GbnfLiteral(s.call_prefix), " (", calls, ") ",
                                                    GbnfLiteral(s.call_suffix)}));
  terms.DefineWhitespace();
  std::string body = Concat({GbnfLiteral(s.prefix), " ", one});
  if (spec.max_calls > 1) {
    body += Concat({" (", GbnfLiteral(s.separator), " ", one, "){0,", std::to_string(spec.max_calls - 1), "}"});
  }
  body += Concat({" ", GbnfLiteral(s.suffix)});
  return b.Text(body);
}

}  // namespace valet
