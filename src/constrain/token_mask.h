// The next-token mask: which tokens a matcher accepts now, computed by walking
// the vocabulary's byte trie with the matcher's stacks (a prefix the grammar
// refuses prunes every token under it), and its application to logits.
#pragma once

#include <cstdint>
#include <span>
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

// Computes masks; holds the walk's scratch, so keep one per thread (or per
// sequence) and reuse it: steady-state steps then allocate nothing.
class TokenMasker {
 public:
  // Text tokens whose whole byte string the matcher accepts, plus the
  // end-of-generation tokens exactly when it can end. Special tokens never.
  // InvalidArgument when the matcher has no vocabulary or is finished.
  Status Compute(const GrammarMatcher& matcher, TokenMask& mask);

 private:
  struct Level {
    size_t stacks_end;  // the level's stacks are stacks_[previous level's stacks_end, stacks_end)
    size_t frames_end;
  };
  std::vector<MatcherFrame> frames_;
  std::vector<MatcherStack> stacks_;
  std::vector<MatcherStack> next_;
  std::vector<Level> levels_;
  StackScratch scratch_;
};

// Sets the logit of every token `mask` refuses to -inf, before the sampler
// chain (penalties, top-k/p, temperature) sees them. InvalidArgument when the
// sizes differ or the mask allows nothing (sampling would have no candidate).
Status ApplyTokenMask(const TokenMask& mask, std::span<float> logits);

}  // namespace valet
