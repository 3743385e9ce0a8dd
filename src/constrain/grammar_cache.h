// Compiled grammars cached per (grammar text, vocabulary): requests that repeat
// a grammar (every call of one tool, one app's schema) compile it once and
// share the immutable result. Thread-safe; least recently used entries go
// first once the capacity is reached. A failed compile is not cached.
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "constrain/gbnf_parser.h"
#include "constrain/grammar_matcher.h"
#include "constrain/token_trie.h"
#include "valet/constraint.h"
#include "valet/status.h"

namespace valet {

class GrammarCache {
 public:
  explicit GrammarCache(size_t capacity = 64, GrammarLimits grammar_limits = {},
                        MatcherLimits matcher_limits = {})
      : capacity_(capacity == 0 ? 1 : capacity),
        grammar_limits_(grammar_limits),
        matcher_limits_(matcher_limits) {}

  // The compiled constraint for `trie`'s vocabulary, translated and parsed
  // on a miss (constraint_grammar.h).
  Result<std::shared_ptr<const CompiledGrammar>> Get(const Constraint& constraint,
                                                     std::shared_ptr<const TokenTrie> trie);
  // A GBNF grammar: Get with ConstraintKind::kGrammar.
  Result<std::shared_ptr<const CompiledGrammar>> GetGbnf(std::string_view text,
                                                         std::shared_ptr<const TokenTrie> trie);

  size_t size() const;

 private:
  using Key = std::tuple<const TokenTrie*, ConstraintKind, uint32_t, std::string>;
  struct Entry {
    std::shared_ptr<const CompiledGrammar> compiled;
    std::list<Key>::iterator lru;  // position in lru_
  };

  const size_t capacity_;
  const GrammarLimits grammar_limits_;
  const MatcherLimits matcher_limits_;
  mutable std::mutex mu_;
  std::map<Key, Entry> entries_;
  std::list<Key> lru_;  // most recent first
};

}  // namespace valet
