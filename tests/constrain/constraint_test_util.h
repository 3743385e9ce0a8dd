// Compiling a Constraint (valet/constraint.h) for byte-level matching in tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "constrain/constraint_grammar.h"
#include "grammar_test_util.h"

namespace valet::test {

inline std::shared_ptr<const CompiledGrammar> CompileConstraint(const Constraint& c) {
  Result<ConstraintGrammar> g = ConstraintToGbnf(c);
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << c.text;
  if (!g.ok()) return nullptr;
  Result<Grammar> parsed = ParseGbnf(g->gbnf, g->limits);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << g->gbnf;
  if (!parsed.ok()) return nullptr;
  auto compiled = std::make_shared<CompiledGrammar>();
  compiled->grammar = std::make_shared<const Grammar>(std::move(parsed).value());
  return compiled;
}

inline std::shared_ptr<const CompiledGrammar> CompileSchema(const std::string& schema,
                                                            uint32_t max_ws = 0) {
  return CompileConstraint({ConstraintKind::kJsonSchema, schema, max_ws});
}

inline std::shared_ptr<const CompiledGrammar> CompileRegex(const std::string& regex) {
  return CompileConstraint({ConstraintKind::kRegex, regex});
}

// The error compiling `c` gives (empty, and a test failure, if it compiles).
inline std::string ConstraintError(const Constraint& c) {
  Result<ConstraintGrammar> g = ConstraintToGbnf(c);
  if (g.ok()) {
    Result<Grammar> parsed = ParseGbnf(g->gbnf, g->limits);
    if (!parsed.ok()) return parsed.status().message();
  }
  EXPECT_FALSE(g.ok()) << "compiled: " << c.text;
  return g.ok() ? "" : g.status().message();
}

}  // namespace valet::test
