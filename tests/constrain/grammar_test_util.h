// Helpers for the constrain tests: a matcher from GBNF text, whole-string matching.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "constrain/gbnf_parser.h"
#include "constrain/grammar_matcher.h"
#include "constrain/position_masks.h"

namespace valet::test {

inline std::shared_ptr<const CompiledGrammar> Compile(std::string_view gbnf,
                                                      std::shared_ptr<const TokenTrie> trie = nullptr,
                                                      MatcherLimits limits = {}) {
  Result<Grammar> g = ParseGbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << gbnf;
  if (!g.ok()) return nullptr;
  auto compiled = std::make_shared<CompiledGrammar>();
  compiled->grammar = std::make_shared<const Grammar>(std::move(g).value());
  compiled->trie = std::move(trie);
  compiled->limits = limits;
  PrecomputePositionMasks(*compiled);
  return compiled;
}

inline GrammarMatcher MakeMatcher(std::shared_ptr<const CompiledGrammar> compiled) {
  Result<GrammarMatcher> m = GrammarMatcher::Create(std::move(compiled));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

// Whether `text` is a whole sentence of the grammar.
inline bool Matches(const std::shared_ptr<const CompiledGrammar>& compiled, std::string_view text) {
  GrammarMatcher m = MakeMatcher(compiled);
  return m.AcceptBytes(text) && m.CanEnd();
}

// Whether `text` is a prefix of some sentence.
inline bool IsPrefix(const std::shared_ptr<const CompiledGrammar>& compiled, std::string_view text) {
  GrammarMatcher m = MakeMatcher(compiled);
  return m.AcceptBytes(text);
}

}  // namespace valet::test
