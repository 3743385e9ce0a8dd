// JSON Schema as GBNF: the schema compiler behind `response_format`,
// `--json-schema` and tool-call arguments (docs/structured-output.md lists
// the keywords). Every keyword that constrains an instance is either compiled
// or refused with its name and path; annotations (title, description,
// examples, default, ...) are skipped. The grammar may produce fewer texts than
// the schema allows (properties in the schema's order, no extra properties
// unless the schema asks for a map, canonical escapes, bounded number
// lengths), never one the schema refuses.
//
// The schema is untrusted: its size, nesting and the number of subschemas are
// bounded before they are walked, and the walk is a work list (subschemas
// become rules, `$ref` cycles become recursive rules), never recursion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/json.h"
#include "constrain/gbnf_builder.h"
#include "constrain/gbnf_parser.h"
#include "constrain/json_terms_gbnf.h"
#include "valet/status.h"

namespace valet {

struct JsonSchemaOptions {
  // 0: compact JSON, no whitespace between tokens. Otherwise a run of at most
  // this many spaces, tabs or newlines may sit between any two tokens.
  uint32_t max_whitespace = 0;
  size_t max_schema_bytes = 256 * 1024;
  int max_depth = 32;              // nesting of the schema document itself
  uint32_t max_subschemas = 2048;  // schemas compiled, each into a rule
  uint32_t max_length = 5000;      // largest maxLength / maxItems / minItems accepted
};

// The grammar limits a schema's grammar is parsed with: lengths up to
// max_length expand into that many rules.
GrammarLimits JsonSchemaGrammarLimits(const JsonSchemaOptions& options);

Result<std::string> JsonSchemaToGbnf(std::string_view schema_text,
                                     const JsonSchemaOptions& options = {});
// An already parsed schema (a tool's parameters inside a request).
Result<std::string> ParsedJsonSchemaToGbnf(const Json& schema,
                                           const JsonSchemaOptions& options = {});
// The schema's rules added to `b`, over `terms` (whose whitespace the caller
// defines once at the end); the name of the rule of the whole value. Several
// schemas may go into one builder: `$ref`s resolve within each.
Result<std::string> AddJsonSchemaRules(const Json& schema, const JsonSchemaOptions& options, GbnfBuilder& b,
                                       JsonTerms& terms);

// `{"type": "json_object"}`: any JSON object.
std::string JsonObjectGbnf(const JsonSchemaOptions& options = {});

}  // namespace valet
