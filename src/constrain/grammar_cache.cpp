#include "constrain/grammar_cache.h"

#include "constrain/constraint_grammar.h"
#include "constrain/grammar_trigger.h"
#include "constrain/position_masks.h"

namespace valet {

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::GetGbnf(std::string_view text,
                                                                     std::shared_ptr<const TokenTrie> trie) {
  return Get(Constraint{ConstraintKind::kGrammar, std::string(text)}, std::move(trie));
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::Get(const Constraint& constraint,
                                                                 std::shared_ptr<const TokenTrie> trie) {
  Key key{trie.get(), constraint.kind, constraint.max_whitespace, constraint.text};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.compiled;
    }
  }
  // Parsed outside the lock: a large grammar must not stall other requests'
  // hits. Two threads missing at once both parse; the second insert keeps the
  // first result.
  VALET_ASSIGN_OR_RETURN(ConstraintGrammar source, ConstraintToGbnf(constraint, grammar_limits_));
  VALET_ASSIGN_OR_RETURN(Grammar grammar, ParseGbnf(source.gbnf, source.limits));
  auto compiled = std::make_shared<CompiledGrammar>();
  compiled->grammar = std::make_shared<const Grammar>(std::move(grammar));
  compiled->trie = std::move(trie);
  compiled->limits = matcher_limits_;
  // The start state must fit the limits, or every matcher would fail to start.
  VALET_RETURN_IF_ERROR(GrammarMatcher::Create(compiled).status());
  // Once per (grammar, vocabulary), bounded by PositionMaskLimits.
  PrecomputePositionMasks(*compiled);
  if (!source.trigger.empty()) {
    VALET_ASSIGN_OR_RETURN(compiled->trigger, GrammarTrigger::Build(std::move(source.trigger), compiled));
  }

  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) return it->second.compiled;
  lru_.push_front(key);
  entries_.emplace(std::move(key), Entry{compiled, lru_.begin()});
  while (entries_.size() > capacity_) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  return std::shared_ptr<const CompiledGrammar>(std::move(compiled));
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace valet
