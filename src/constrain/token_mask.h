// The next-token mask: which tokens a matcher accepts now, computed by walking
// the vocabulary's byte trie with the matcher's stacks (a prefix the grammar
// refuses prunes every token under it), and its application to logits.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <span>
#include <unordered_map>
#include <vector>

#include "constrain/grammar_matcher.h"
#include "valet/status.h"

namespace valet {

// One bit per token.
class TokenMask {
 public:
  void Reset(int32_t n_vocab, bool value);
  int32_t size() const { return n_vocab_; }
  bool Allowed(int32_t id) const { return (words_[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1u; }
  void Allow(int32_t id) { words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
  int32_t Count() const;

 private:
  int32_t n_vocab_ = 0;
  std::vector<uint64_t> words_;
};

// Computes masks; holds the walk's scratch, so keep one per sequence (or per
// thread) and reuse it: steady-state steps then allocate nothing.
//
// It also keeps the last few masks by matcher state. The mask is a function of
// the state's content (each stack's chain of grammar positions), and states
// recur: every character inside a JSON string leaves the same stacks, and the
// keys of one object share theirs. So the costly walks (inside a string most
// of the vocabulary fits) happen once per string context, not once per token.
class TokenMasker {
 public:
  explicit TokenMasker(size_t cached_masks = 32) : cache_capacity_(cached_masks) {}

  // Text tokens whose whole byte string the matcher accepts, plus the
  // end-of-generation tokens exactly when it can end. Special tokens never.
  // InvalidArgument when the matcher has no vocabulary or is finished.
  Status Compute(const GrammarMatcher& matcher, TokenMask& mask);

 private:
  struct CacheEntry {
    uint64_t hash;
    std::vector<uint32_t> key;
    TokenMask mask;
  };
  // The walk itself, without the cache.
  void Walk(const GrammarMatcher& matcher, TokenMask& mask);
  void MakeKey(const GrammarMatcher& matcher);

  static constexpr int32_t kUnknown = -2;  // transition not computed, or set not interned
  static constexpr int32_t kDead = -1;     // no stack survives the byte
  static constexpr size_t kMaxSets = 4096;
  struct InternedSet {
    std::vector<MatcherStack> stacks;
    std::array<int32_t, 256> next;  // by byte: a set, kDead or kUnknown
    ByteSet loop;                   // bytes that leave the set unchanged, once loop_known
    bool loop_known = false;
  };
  int32_t Intern(std::span<const MatcherStack> stacks);
  int32_t Transition(const Grammar& g, const MatcherLimits& limits, int32_t set, uint8_t b, uint32_t base);
  const ByteSet& LoopBytes(const Grammar& g, const MatcherLimits& limits, int32_t set, uint32_t base);

  struct Level {
    int32_t set;          // an interned set, or kUnknown: then stacks_[stacks_begin, stacks_end)
    size_t stacks_begin;
    size_t stacks_end;    // stacks_ is cut back to this when the scan returns here
    size_t frames_end;
  };
  FrameArena arena_;
  std::vector<InternedSet> sets_;
  std::unordered_map<uint64_t, int32_t> set_index_;  // hash of a set's stacks -> set
  std::vector<MatcherStack> stacks_;
  std::vector<MatcherStack> next_;
  std::vector<Level> levels_;
  StackScratch scratch_;
  size_t cache_capacity_;
  std::shared_ptr<const CompiledGrammar> cached_for_;  // entries hold masks of this grammar only
  std::vector<CacheEntry> cache_;                      // most recently used last
  std::vector<uint32_t> key_;
  std::vector<uint32_t> chain_;
  std::vector<std::pair<uint32_t, uint32_t>> chains_;  // (offset, length) in chain_
};

// Sets the logit of every token `mask` refuses to -inf, before the sampler
// chain (penalties, top-k/p, temperature) sees them. InvalidArgument when the
// sizes differ or the mask allows nothing (sampling would have no candidate).
Status ApplyTokenMask(const TokenMask& mask, std::span<float> logits);

}  // namespace valet
