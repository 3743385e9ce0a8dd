// What a generation's output must follow: a JSON Schema, any JSON object, a
// GBNF grammar, a regular expression or calls of the tools a chat offers
// (docs/structured-output.md). The
// constraint is compiled once per (constraint, vocabulary) and applied as a
// mask before sampling, so the output always parses.
#pragma once

#include <cstdint>
#include <string>

#include "valet/export.h"
#include "valet/status.h"

namespace valet {

enum class ConstraintKind : int32_t {
  kNone = 0,
  kJsonSchema,  // text: the schema (JSON)
  kJsonObject,  // any JSON object; text unused
  kGrammar,     // text: a GBNF grammar, as llama.cpp reads it
  kRegex,       // text: a regular expression the whole output matches
  kToolCall,    // text: the tools and how the model writes a call (JSON; structured-output.md)
};
VALET_API const char* ConstraintKindName(ConstraintKind kind);  // "none", "json_schema", ...
// InvalidArgument for any other name.
VALET_API Result<ConstraintKind> ConstraintKindFromName(const char* name);

struct Constraint {
  ConstraintKind kind = ConstraintKind::kNone;
  std::string text;
  // JSON kinds: 0 for compact JSON (no whitespace between tokens); otherwise
  // at most this many spaces, tabs or newlines between two tokens (<= 16).
  uint32_t max_whitespace = 0;

  bool active() const { return kind != ConstraintKind::kNone; }
  bool operator==(const Constraint&) const = default;
};

inline constexpr uint32_t kMaxConstraintWhitespace = 16;

}  // namespace valet
