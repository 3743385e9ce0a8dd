// A sequence's position in a grammar: the set of pushdown stacks the bytes so
// far leave alive. Small and copyable (a shared pointer to the immutable
// compiled grammar, the stack tops and their frames), so a sequence that parks,
// snapshots or forks copies it; the grammar and the token trie are shared.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "constrain/grammar.h"
#include "constrain/grammar_stacks.h"
#include "constrain/token_trie.h"
#include "valet/status.h"

namespace valet {

class GrammarTrigger;
class PositionMasks;

// A grammar compiled for one vocabulary; immutable, shared by every sequence
// that uses it (GrammarCache hands these out). `trie` may be null for byte-level
// use (tests, tools): token-level calls then fail.
struct CompiledGrammar {
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const TokenTrie> trie;
  MatcherLimits limits;
  // What each grammar position accepts on its own (position_masks.h), for
  // this trie and these limits; null makes every mask a whole-trie walk.
  std::shared_ptr<const PositionMasks> positions;
  // Non-null: the output is free until this trigger, the grammar applying
  // after it (grammar_trigger.h).
  std::shared_ptr<const GrammarTrigger> trigger;
};

class GrammarMatcher {
 public:
  // ResourceExhausted when the grammar's start already exceeds the limits.
  static Result<GrammarMatcher> Create(std::shared_ptr<const CompiledGrammar> compiled);

  // Advances by one byte; false (state unchanged) when the grammar refuses it.
  bool Accept(uint8_t byte);
  // All bytes or none: false, state unchanged, when any is refused.
  bool AcceptBytes(std::string_view bytes);
  // A sampled token: its bytes, or, for an end-of-generation token, the end of
  // the grammar (after which the matcher is finished). InvalidArgument, state
  // unchanged, for a token the mask would have refused.
  Status AcceptToken(int32_t token);

  // Whether the bytes so far are a complete sentence of the grammar.
  bool CanEnd() const { return HasAccepted(stacks_); }
  // An end-of-generation token was accepted.
  bool finished() const { return finished_; }

  const CompiledGrammar& compiled() const { return *compiled_; }
  const std::shared_ptr<const CompiledGrammar>& compiled_ptr() const { return compiled_; }
  std::span<const MatcherStack> stacks() const { return stacks_; }
  const std::vector<MatcherFrame>& frames() const { return frames_; }

 private:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> compiled) : compiled_(std::move(compiled)) {}
  bool Advance(std::string_view bytes);
  void MaybeCompact();

  std::shared_ptr<const CompiledGrammar> compiled_;
  std::vector<MatcherStack> stacks_;
  std::vector<MatcherFrame> frames_;
  size_t frames_after_compact_ = 0;
  bool finished_ = false;
};

}  // namespace valet
