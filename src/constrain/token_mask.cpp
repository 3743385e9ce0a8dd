#include "constrain/token_mask.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>

namespace valet {

void TokenMask::Reset(int32_t n_vocab, bool value) {
  n_vocab_ = n_vocab;
  words_.assign((static_cast<size_t>(n_vocab) + 63) / 64, value ? ~uint64_t{0} : 0);
  if (value && (n_vocab & 63) != 0) words_.back() = (uint64_t{1} << (n_vocab & 63)) - 1;
}

int32_t TokenMask::Count() const {
  int32_t n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return n;
}

Status TokenMasker::Compute(const GrammarMatcher& matcher, TokenMask& mask) {
  const CompiledGrammar& compiled = matcher.compiled();
  if (compiled.trie == nullptr) return InvalidArgument("token mask: the grammar has no vocabulary");
  if (matcher.finished()) return InvalidArgument("token mask: the grammar has already ended");
  if (cache_capacity_ == 0) {
    Walk(matcher, mask);
    return Status::Ok();
  }
  if (cached_for_ != matcher.compiled_ptr()) {
    cache_.clear();
    cached_for_ = matcher.compiled_ptr();
  }
  MakeKey(matcher);
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the key's words
  for (uint32_t w : key_) hash = (hash ^ w) * 1099511628211ull;
  for (size_t i = cache_.size(); i > 0; --i) {
    if (cache_[i - 1].hash != hash || cache_[i - 1].key != key_) continue;
    std::rotate(cache_.begin() + static_cast<ptrdiff_t>(i - 1), cache_.begin() + static_cast<ptrdiff_t>(i),
                cache_.end());
    mask = cache_.back().mask;
    return Status::Ok();
  }
  Walk(matcher, mask);
  if (cache_.size() == cache_capacity_) {
    CacheEntry reused = std::move(cache_.front());  // the least recently used: its buffers are reused
    cache_.erase(cache_.begin());
    cache_.push_back(std::move(reused));
  } else {
    cache_.emplace_back();
  }
  cache_.back().hash = hash;
  cache_.back().key = key_;
  cache_.back().mask = mask;
  return Status::Ok();
}

// The state's content, independent of frame numbering: each stack as its
// chain of positions (top first), chains sorted, each ended by kNoFrame.
void TokenMasker::MakeKey(const GrammarMatcher& matcher) {
  chain_.clear();
  chains_.clear();
  const std::vector<MatcherFrame>& frames = matcher.frames();
  for (const MatcherStack& s : matcher.stacks()) {
    const auto offset = static_cast<uint32_t>(chain_.size());
    chain_.push_back(s.pos);
    for (uint32_t f = s.parent; f != kNoFrame; f = frames[f].parent) chain_.push_back(frames[f].pos);
    chains_.push_back({offset, static_cast<uint32_t>(chain_.size()) - offset});
  }
  std::sort(chains_.begin(), chains_.end(), [this](const auto& a, const auto& b) {
    return std::lexicographical_compare(chain_.begin() + a.first, chain_.begin() + a.first + a.second,
                                        chain_.begin() + b.first, chain_.begin() + b.first + b.second);
  });
  key_.clear();
  for (const auto& [offset, length] : chains_) {
    key_.insert(key_.end(), chain_.begin() + offset, chain_.begin() + offset + length);
    key_.push_back(kNoFrame);
  }
}

// A set of stacks whose frames all belong to the matcher (none made by the
// walk) means the same stacks wherever the walk meets it, so it gets a number
// and its transitions by byte are remembered: inside a string, each of the
// thousands of trie nodes costs one table lookup instead of a step.
int32_t TokenMasker::Intern(std::span<const MatcherStack> stacks) {
  if (sets_.size() >= kMaxSets) return kUnknown;
  uint64_t hash = 1469598103934665603ull;
  for (const MatcherStack& st : stacks) hash = ((hash ^ st.pos) * 1099511628211ull ^ st.parent) * 1099511628211ull;
  auto [it, inserted] = set_index_.emplace(hash, static_cast<int32_t>(sets_.size()));
  if (!inserted) {
    const std::vector<MatcherStack>& known = sets_[static_cast<size_t>(it->second)].stacks;
    return std::equal(known.begin(), known.end(), stacks.begin(), stacks.end()) ? it->second : kUnknown;
  }
  sets_.emplace_back();
  sets_.back().stacks.assign(stacks.begin(), stacks.end());
  sets_.back().next.fill(kUnknown);
  sets_.back().loop_known = false;
  return it->second;
}

// The interned set `set` becomes after byte b, computed once: kDead, a set,
// or kUnknown when the result uses frames the walk made (it is then in next_).
int32_t TokenMasker::Transition(const Grammar& g, const MatcherLimits& limits, int32_t set, uint8_t b,
                                uint32_t base) {
  int32_t target = sets_[static_cast<size_t>(set)].next[b];
  if (target != kUnknown) return target;
  next_.clear();
  if (!StepStacks(g, limits, sets_[static_cast<size_t>(set)].stacks, b, arena_, next_, scratch_) || next_.empty()) {
    target = kDead;
  } else if (std::all_of(next_.begin(), next_.end(), [base](const MatcherStack& st) {
               return st.parent == kNoFrame || st.parent < base;
             })) {
    target = Intern(next_);
  }
  if (target != kUnknown) sets_[static_cast<size_t>(set)].next[b] = target;
  return target;
}

// The bytes that leave `set` unchanged, from all 256 transitions (once per set).
const ByteSet& TokenMasker::LoopBytes(const Grammar& g, const MatcherLimits& limits, int32_t set, uint32_t base) {
  if (!sets_[static_cast<size_t>(set)].loop_known) {
    ByteSet loop;
    const size_t frames = arena_.size();
    for (unsigned b = 0; b < 256; ++b) {
      if (Transition(g, limits, set, static_cast<uint8_t>(b), base) == set) loop.Add(static_cast<uint8_t>(b));
      arena_.Truncate(frames);
    }
    sets_[static_cast<size_t>(set)].loop = loop;
    sets_[static_cast<size_t>(set)].loop_known = true;
  }
  return sets_[static_cast<size_t>(set)].loop;
}

// Preorder scan of the trie. levels_[d] holds the stacks after the first d
// bytes of the current path (an interned set, or a range of stacks_); a node
// at depth d steps the stacks of level d-1 by its byte, and when none survive
// its whole subtree is skipped. Frames the path made are dropped when the scan
// leaves it, so the arena stays as deep as the longest token.
void TokenMasker::Walk(const GrammarMatcher& matcher, TokenMask& mask) {
  const CompiledGrammar& compiled = matcher.compiled();
  const TokenTrie& trie = *compiled.trie;
  const Grammar& g = *compiled.grammar;
  mask.Reset(trie.vocab_size(), false);
  if (matcher.CanEnd()) {
    for (int32_t id : trie.eog_tokens()) mask.Allow(id);
  }
  arena_.Assign(matcher.frames());
  const auto base = static_cast<uint32_t>(arena_.size());
  sets_.clear();
  set_index_.clear();
  stacks_.assign(matcher.stacks().begin(), matcher.stacks().end());
  levels_.clear();
  levels_.push_back({Intern(stacks_), 0, stacks_.size(), base});
  const std::span<const TokenTrieNode> nodes = trie.nodes();
  const std::span<const int32_t> tokens = trie.node_tokens();
  size_t i = 1;
  while (i < nodes.size()) {
    const TokenTrieNode& node = nodes[i];
    levels_.resize(node.depth);  // back to the parent's level
    const Level parent = levels_.back();
    stacks_.resize(parent.stacks_end);
    arena_.Truncate(parent.frames_end);
    int32_t target = kUnknown;
    if (parent.set >= 0) {
      target = Transition(g, compiled.limits, parent.set, node.byte, base);
    } else {
      next_.clear();
      const std::span<const MatcherStack> in(stacks_.data() + parent.stacks_begin,
                                             parent.stacks_end - parent.stacks_begin);
      if (!StepStacks(g, compiled.limits, in, node.byte, arena_, next_, scratch_) || next_.empty()) target = kDead;
    }
    if (target == kDead) {
      i = node.subtree_end;
      continue;
    }
    if (target >= 0) {
      arena_.Truncate(parent.frames_end);  // whatever the step made, the set does not use
      // Looping (a string's characters): when every byte below this node
      // keeps the set as it is, every token below fits.
      if (target == parent.set && node.below != kNoSummary &&
          trie.below(node.below).SubsetOf(LoopBytes(g, compiled.limits, target, base))) {
        for (int32_t t : trie.subtree_tokens(static_cast<uint32_t>(i))) mask.Allow(t);
        i = node.subtree_end;
        continue;
      }
    }
    for (uint32_t t = node.tokens_begin; t < node.tokens_end; ++t) mask.Allow(tokens[t]);
    if (target >= 0) {
      levels_.push_back({target, stacks_.size(), stacks_.size(), parent.frames_end});
    } else {
      stacks_.insert(stacks_.end(), next_.begin(), next_.end());
      levels_.push_back({kUnknown, parent.stacks_end, stacks_.size(), arena_.size()});
    }
    ++i;
  }
}

Status ApplyTokenMask(const TokenMask& mask, std::span<float> logits) {
  if (static_cast<size_t>(mask.size()) != logits.size()) {
    return InvalidArgument("token mask: " + std::to_string(mask.size()) + " tokens for " +
                           std::to_string(logits.size()) + " logits");
  }
  bool any = false;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (size_t id = 0; id < logits.size(); ++id) {
    if (mask.Allowed(static_cast<int32_t>(id))) {
      any = true;
    } else {
      logits[id] = kNegInf;
    }
  }
  if (!any) return InvalidArgument("token mask: no token is allowed");
  return Status::Ok();
}

}  // namespace valet
