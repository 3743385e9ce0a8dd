// A Constraint (valet/constraint.h) as GBNF text and the limits it is parsed
// with: the one place that knows how each kind becomes a grammar.
#pragma once

#include <string>

#include "constrain/gbnf_parser.h"
#include "valet/constraint.h"
#include "valet/status.h"

namespace valet {

struct ConstraintGrammar {
  std::string gbnf;
  GrammarLimits limits;
  // Non-empty: the output is free until this text, and the grammar applies
  // to what follows it (grammar_trigger.h).
  std::string trigger{};
};

// InvalidArgument/Unsupported/OutOfRange naming what is wrong with the
// constraint (the schema keyword and its path, the regex construct, ...).
Result<ConstraintGrammar> ConstraintToGbnf(const Constraint& constraint,
                                           const GrammarLimits& user_grammar_limits = {});

}  // namespace valet
