// The next-token mask: which tokens a matcher accepts now, from the grammar's
// precomputed position masks plus a walk of the few trie subtrees whose tokens
// depend on the context, or by walking the whole vocabulary's byte trie with
// the matcher's stacks (a prefix the grammar refuses prunes every token under
// it); and its application to logits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "constrain/grammar_matcher.h"
#include "constrain/position_masks.h"
#include "constrain/trie_stepper.h"
#include "valet/status.h"

namespace valet {

// One bit per token.
class TokenMask {
 public:
  void Reset(int32_t n_vocab, bool value);
  int32_t size() const { return n_vocab_; }
  bool Allowed(int32_t id) const {
    return (words_[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1u;
  }
  void Allow(int32_t id) { words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
  void Disallow(int32_t id) { words_[static_cast<size_t>(id) >> 6] &= ~(uint64_t{1} << (id & 63)); }
  // Refuses every token set in `words` (this mask's layout).
  void DisallowAll(std::span<const uint64_t> words) {
    for (size_t w = 0; w < words.size() && w < words_.size(); ++w) words_[w] &= ~words[w];
  }
  // Allows every token set in `words` (this mask's layout).
  void AllowAll(std::span<const uint64_t> words) {
    for (size_t w = 0; w < words.size() && w < words_.size(); ++w) words_[w] |= words[w];
  }
  int32_t Count() const;

 private:
  int32_t n_vocab_ = 0;
  std::vector<uint64_t> words_;
};

// Computes masks; holds the walk's scratch, so keep one per sequence (or per
// thread) and reuse it: steady-state steps then allocate nothing.
//
// With the compiled grammar's position masks (position_masks.h) a mask is the
// union of what each stack's position accepts on its own, plus the
// context-dependent tokens checked against the real stacks: a walk of a few
// trie subtrees instead of the whole trie. Without them, or when a state is
// outside what they cover, it walks the whole trie.
//
// It also keeps the last few masks by matcher state. The mask is a function of
// the state's content (each stack's chain of grammar positions), and states
// recur: every character inside a JSON string leaves the same stacks, and the
// keys of one object share theirs.
class TokenMasker {
 public:
  explicit TokenMasker(size_t cached_masks = 32) : cache_capacity_(cached_masks) {}

  // Text tokens whose whole byte string the matcher accepts, plus the
  // end-of-generation tokens exactly when it can end. Special tokens never.
  // InvalidArgument when the matcher has no vocabulary or is finished.
  Status Compute(const GrammarMatcher& matcher, TokenMask& mask);

  // How masks were made since construction: from the position masks, by a
  // whole-trie walk, from the cache.
  struct Counts {
    uint64_t from_positions = 0;
    uint64_t walked = 0;
    uint64_t cached = 0;
  };
  const Counts& counts() const { return counts_; }

 private:
  struct CacheEntry {
    uint64_t hash;
    std::vector<uint32_t> key;
    TokenMask mask;
  };
  void Uncached(const GrammarMatcher& matcher, TokenMask& mask);
  // The walk over the whole trie.
  void Walk(const GrammarMatcher& matcher, TokenMask& mask);
  // The mask from the position masks; false (mask undefined) when they do
  // not cover the state.
  bool FromPositions(const GrammarMatcher& matcher, TokenMask& mask);
  bool CollectPositions(const GrammarMatcher& matcher);
  // Whether `item` expands, in the matcher's frames, to some stack: where a
  // token may end when an entry leaves the rest to the context. Its cost is
  // added to the step's totals (the entry's peaks do not count it).
  bool GoesOn(const GrammarMatcher& matcher, MatcherStack item, uint64_t& expansions, uint64_t& stacks);
  // For an entry inside a counted loop (frame `loop`): the room its real
  // count leaves, once the ways on past the loop go on. 0: they do not.
  uint32_t LoopRoom(const GrammarMatcher& matcher, const PositionMask& entry, uint32_t loop,
                    uint64_t& expansions, uint64_t& stacks);
  void AllowCounted(const PositionMask& entry, uint32_t room, TokenMask& mask);
  // Scans nodes [begin, end) of the trie in preorder with stepper_, allowing
  // the tokens whose bytes survive; the levels of begin's ancestors must be
  // in place.
  void WalkRange(const TokenTrie& trie, uint32_t begin, uint32_t end, TokenMask& mask);
  // Steps the ancestors of `node` not already on the stepper's path; false
  // when one of them is refused.
  bool ReachParentOf(const TokenTrie& trie, uint32_t node);
  void MakeKey(const GrammarMatcher& matcher);

  TrieStepper stepper_;
  std::vector<uint32_t> path_;  // path_[d]: the node whose level is at depth d
  std::vector<uint32_t> ancestors_;
  struct Used {
    const PositionMask* entry;
    uint32_t room;  // counted entries: iterations the loop's real count leaves
  };
  std::vector<Used> used_;
  FrameArena way_frames_;  // GoesOn's: the matcher's frames, copied once per mask
  const GrammarMatcher* way_frames_for_ = nullptr;
  StackScratch way_scratch_;
  std::vector<MatcherStack> way_stacks_;
  std::vector<uint64_t> counted_words_;
  std::vector<uint32_t> dependent_;  // trie subtrees to check against the real stacks
  Counts counts_;
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
