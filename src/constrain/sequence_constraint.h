// Output constraints (valet/constraint.h) on an engine's sequences: the
// vocabulary's token trie and the compiled constraints, shared by every
// sequence of an engine, and each sequence's matcher and mask.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "constrain/grammar_cache.h"
#include "constrain/grammar_matcher.h"
#include "constrain/grammar_trigger.h"
#include "constrain/token_mask.h"
#include "valet/constraint.h"
#include "valet/status.h"

namespace valet {

// Compiles constraints for one vocabulary; any thread. The trie is built on
// the first constrained request (about 0.1 s for a 150k vocabulary), not at
// load, so an app that never constrains never pays for it.
class ConstraintCompiler {
 public:
  using TrieFactory = std::function<Result<std::shared_ptr<const TokenTrie>>()>;
  explicit ConstraintCompiler(TrieFactory make_trie, size_t cached_constraints = 32)
      : make_trie_(std::move(make_trie)), cache_(cached_constraints) {}

  Result<std::shared_ptr<const CompiledGrammar>> Compile(const Constraint& constraint) const;

 private:
  const TrieFactory make_trie_;
  mutable std::once_flag trie_once_;
  mutable std::shared_ptr<const TokenTrie> trie_;
  mutable Status trie_status_;
  mutable GrammarCache cache_;
};

// One sequence's place in its constraint. Mask before the forward pass (it
// depends only on the tokens sampled so far, and is where a constraint that
// admits nothing fails, before the step changes anything), then apply it to
// the logits and accept the sampled token. A constraint with a trigger
// (grammar_trigger.h) waits for it: until then the mask refuses only the
// tokens that would complete the trigger into bytes the grammar refuses.
class SequenceConstraint {
 public:
  // `replay`: tokens the sequence already generated (a recovered durable
  // task's), fed to the matcher in order; Corrupt when it refuses one.
  static Result<SequenceConstraint> Create(std::shared_ptr<const CompiledGrammar> compiled,
                                           std::span<const int32_t> replay = {});

  Status PrepareMask();
  // The logits with every refused token at -inf (a copy; PrepareMask first).
  std::span<const float> Apply(std::span<const float> logits);
  Status Accept(int32_t token);
  // Whether the mask PrepareMask made allows `token`.
  bool Allows(int32_t token) const { return token >= 0 && token < mask_.size() && mask_.Allowed(token); }
  const GrammarMatcher& matcher() const { return matcher_; }

 private:
  explicit SequenceConstraint(GrammarMatcher matcher)
      : matcher_(std::move(matcher)), waiting_(matcher_.compiled().trigger != nullptr) {}
  GrammarMatcher matcher_;
  bool waiting_;                         // for the trigger: the grammar has not started
  GrammarTrigger::State trigger_state_ = 0;
  TokenMasker masker_;
  TokenMask mask_;
  std::vector<float> masked_;  // [n_vocab]
};

}  // namespace valet
