// The flags that put a generation under an output constraint
// (valet/constraint.h), shared by generate and bench-constraint.
#pragma once

#include "cli_args.h"
#include "valet/constraint.h"
#include "valet/status.h"

// For a command's FlagSpec table.
#define VALET_CONSTRAINT_FLAGS                                                        \
  {"--grammar", nullptr, true,                                                        \
   "a GBNF grammar file the output must follow (docs/structured-output.md)"},         \
      {"--json-schema", nullptr, true, "a JSON Schema file the output must follow"},  \
      {"--json-object", nullptr, false, "the output is a JSON object"},               \
      {"--regex", nullptr, true, "a regular expression the whole output must match"}, \
      {"--max-whitespace", nullptr, true,                                             \
       "JSON constraints: whitespace run between tokens, 0 = compact (default 0)"}

namespace valet::cli {

// At most one of --grammar, --json-schema, --json-object, --regex; none: an
// inactive constraint.
Result<Constraint> ReadConstraintFlags(const Args& a);

}  // namespace valet::cli
