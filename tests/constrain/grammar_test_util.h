// Helpers for the constrain tests: a matcher from GBNF text, whole-string
// matching, the brute-force mask.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "constrain/gbnf_parser.h"
#include "constrain/grammar_matcher.h"
#include "constrain/token_mask.h"
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

// The mask by definition: each token tried on a copy of the matcher.
inline TokenMask BruteForce(const GrammarMatcher& m) {
  const TokenTrie& trie = *m.compiled().trie;
  TokenMask mask;
  mask.Reset(trie.vocab_size(), false);
  for (int32_t id = 0; id < trie.vocab_size(); ++id) {
    GrammarMatcher copy = m;
    if (copy.AcceptToken(id).ok()) mask.Allow(id);
  }
  return mask;
}

}  // namespace valet::test
