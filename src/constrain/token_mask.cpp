#include "constrain/token_mask.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>

namespace valet {
namespace {

// A kEnd symbol: a stack there returns into its frame as an ended rule does.
uint32_t EndPosition(const Grammar& g) {
  uint32_t pos = 0;
  while (g.symbols[pos].kind != SymbolKind::kEnd) ++pos;
  return pos;
}

}  // namespace

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
    Uncached(matcher, mask);
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
    std::rotate(cache_.begin() + static_cast<ptrdiff_t>(i - 1),
                cache_.begin() + static_cast<ptrdiff_t>(i), cache_.end());
    mask = cache_.back().mask;
    ++counts_.cached;
    return Status::Ok();
  }
  Uncached(matcher, mask);
  if (cache_.size() == cache_capacity_) {
    CacheEntry reused =
        std::move(cache_.front());  // the least recently used: its buffers are reused
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
    for (uint32_t f = s.parent; f != kNoFrame; f = frames[f].parent) {
      chain_.push_back(frames[f].pos);
      // A loop's count, marked apart from positions (which stay below it).
      if (frames[f].count != 0) chain_.push_back(frames[f].count | kSymbolicCount);
    }
    chains_.push_back({offset, static_cast<uint32_t>(chain_.size()) - offset});
  }
  std::sort(chains_.begin(), chains_.end(), [this](const auto& a, const auto& b) {
    return std::lexicographical_compare(
        chain_.begin() + a.first, chain_.begin() + a.first + a.second, chain_.begin() + b.first,
        chain_.begin() + b.first + b.second);
  });
  key_.clear();
  for (const auto& [offset, length] : chains_) {
    key_.insert(key_.end(), chain_.begin() + offset, chain_.begin() + offset + length);
    key_.push_back(kNoFrame);
  }
}

void TokenMasker::Uncached(const GrammarMatcher& matcher, TokenMask& mask) {
  if (FromPositions(matcher, mask)) {
    ++counts_.from_positions;
  } else {
    Walk(matcher, mask);
    ++counts_.walked;
  }
}

void TokenMasker::WalkRange(const TokenTrie& trie, uint32_t begin, uint32_t end, TokenMask& mask) {
  const std::span<const TokenTrieNode> nodes = trie.nodes();
  const std::span<const int32_t> tokens = trie.node_tokens();
  uint32_t i = begin;
  while (i < end) {
    const TokenTrieNode& node = nodes[i];
    const TrieStepper::Step step = stepper_.Advance(node.depth, node.byte);
    if (!step.alive) {
      i = node.subtree_end;
      continue;
    }
    if (path_.size() <= node.depth) path_.resize(node.depth + 1);
    path_[node.depth] = i;
    // Looping (a string's characters): when every byte below this node keeps
    // the stacks as they are, every token below fits.
    if (step.looped && node.below != kNoSummary && stepper_.LoopsOn(trie.below(node.below))) {
      for (int32_t t : trie.subtree_tokens(i)) mask.Allow(t);
      i = node.subtree_end;
      continue;
    }
    for (uint32_t t = node.tokens_begin; t < node.tokens_end; ++t) mask.Allow(tokens[t]);
    ++i;
  }
}

bool TokenMasker::ReachParentOf(const TokenTrie& trie, uint32_t node) {
  ancestors_.clear();
  for (uint32_t a = trie.parent(node); a != 0; a = trie.parent(a)) {
    const uint32_t depth = trie.nodes()[a].depth;
    if (depth <= stepper_.depth() && path_[depth] == a) break;
    ancestors_.push_back(a);
  }
  for (size_t k = ancestors_.size(); k > 0; --k) {
    const TokenTrieNode& a = trie.nodes()[ancestors_[k - 1]];
    if (!stepper_.Advance(a.depth, a.byte).alive) return false;
    if (path_.size() <= a.depth) path_.resize(a.depth + 1);
    path_[a.depth] = ancestors_[k - 1];
  }
  return true;
}

// Preorder scan of the whole trie with the matcher's stacks; a refused prefix
// skips its subtree.
void TokenMasker::Walk(const GrammarMatcher& matcher, TokenMask& mask) {
  const CompiledGrammar& compiled = matcher.compiled();
  const TokenTrie& trie = *compiled.trie;
  mask.Reset(trie.vocab_size(), false);
  if (matcher.CanEnd()) {
    for (int32_t id : trie.eog_tokens()) mask.Allow(id);
  }
  stepper_.Reset(*compiled.grammar, compiled.limits, matcher.frames(), matcher.stacks());
  WalkRange(trie, 1, static_cast<uint32_t>(trie.nodes().size()), mask);
}

// The position entries of the matcher's stacks, into used_; false when one is
// missing, its forced chain is not the stack's, or the peaks shifted by the
// real context could meet a limit (the entries assume none is met).
bool TokenMasker::CollectPositions(const GrammarMatcher& matcher) {
  const CompiledGrammar& compiled = matcher.compiled();
  const Grammar& g = *compiled.grammar;
  const std::vector<MatcherFrame>& frames = matcher.frames();
  uint64_t expansions = 0;
  uint64_t stacks = 0;
  uint64_t dependent = 0;
  used_.clear();
  way_frames_for_ = nullptr;
  for (const MatcherStack& s : matcher.stacks()) {
    if (s.pos == kAcceptedPos) continue;
    const PositionMask* entry = compiled.positions->Find(s.pos);
    if (entry == nullptr) return false;
    uint32_t f = s.parent;
    for (uint32_t q : entry->chain) {
      if (f == kNoFrame || frames[f].pos != q) return false;
      f = frames[f].parent;
    }
    if (entry->rooted && f != kNoFrame) return false;
    uint32_t room = 0;
    if (entry->counted) {
      if (f == kNoFrame || entry->returns) return false;
      const GrammarSymbol loop = g.symbols[frames[f].pos];
      if (loop.kind != SymbolKind::kRepeat || g.repeats[loop.value].rule != entry->counted_rule) return false;
      room = LoopRoom(matcher, *entry, f, expansions, stacks);
      if (room == 0) return false;
      f = frames[f].parent;
    } else if (entry->returns && f != kNoFrame &&
               !GoesOn(matcher, {EndPosition(g), f}, expansions, stacks)) {  // a return into f
      return false;
    }
    const uint64_t shift = f == kNoFrame ? 0 : frames[f].depth;
    if (shift + entry->peak_depth > compiled.limits.max_depth) return false;
    expansions += entry->peak_expansions;
    stacks += entry->peak_stacks;
    dependent += entry->dependent.size();
    used_.push_back({entry, room});
  }
  // So many subtrees to check (many stacks, each with its own) that walking
  // the whole trie once costs less.
  if (dependent > compiled.trie->nodes().size() / 4) return false;
  return expansions <= compiled.limits.max_expansions && stacks <= compiled.limits.max_stacks;
}

bool TokenMasker::GoesOn(const GrammarMatcher& matcher, MatcherStack item, uint64_t& expansions,
                         uint64_t& stacks) {
  const CompiledGrammar& compiled = matcher.compiled();
  const size_t base = matcher.frames().size();
  if (way_frames_for_ != &matcher) {  // once per mask: later calls drop only what they made
    way_frames_.Assign(matcher.frames());
    way_frames_for_ = &matcher;
  }
  way_stacks_.clear();
  way_scratch_.peak_expansions = 0;
  const bool fits = ExpandStacks(*compiled.grammar, compiled.limits, std::span<const MatcherStack>(&item, 1),
                                 way_frames_, way_stacks_, way_scratch_);
  way_frames_.Truncate(base);
  if (!fits || way_stacks_.empty()) return false;
  expansions += way_scratch_.peak_expansions;
  stacks += way_stacks_.size();
  return true;
}

uint32_t TokenMasker::LoopRoom(const GrammarMatcher& matcher, const PositionMask& entry, uint32_t loop,
                               uint64_t& expansions, uint64_t& stacks) {
  const Grammar& g = *matcher.compiled().grammar;
  const MatcherFrame& frame = matcher.frames()[loop];
  const GrammarRepeat& rep = g.repeats[g.symbols[frame.pos].value];
  if (frame.count == 0 || frame.count > rep.max) return 0;
  if (!GoesOn(matcher, {frame.pos + 1, frame.parent}, expansions, stacks)) return 0;
  // A token that leaves the loop may end its rule too: where that returns.
  if (entry.exit_goes_on && frame.parent != kNoFrame &&
      !GoesOn(matcher, {EndPosition(g), frame.parent}, expansions, stacks)) {
    return 0;
  }
  return rep.max + 1 - frame.count;
}

// The counted tokens that need at most `room` iterations: the few as a list,
// or all of them but the few that need more.
void TokenMasker::AllowCounted(const PositionMask& entry, uint32_t room, TokenMask& mask) {
  if (room < 2 || entry.counted_ids.empty()) return;
  const size_t n = entry.counted_ids.size();
  const size_t fit = entry.counted_ends[std::min<size_t>(room - 2, entry.counted_ends.size() - 1)];
  if (entry.counted_words.empty() || fit < n - fit) {
    for (size_t i = 0; i < fit; ++i) mask.Allow(entry.counted_ids[i]);
    return;
  }
  counted_words_ = entry.counted_words;
  for (size_t i = fit; i < n; ++i) {
    const int32_t t = entry.counted_ids[i];
    counted_words_[static_cast<size_t>(t) >> 6] &= ~(uint64_t{1} << (t & 63));
  }
  mask.AllowAll(counted_words_);
}

bool TokenMasker::FromPositions(const GrammarMatcher& matcher, TokenMask& mask) {
  const CompiledGrammar& compiled = matcher.compiled();
  if (compiled.positions == nullptr || !CollectPositions(matcher)) return false;
  const TokenTrie& trie = *compiled.trie;
  mask.Reset(trie.vocab_size(), false);
  if (matcher.CanEnd()) {
    for (int32_t id : trie.eog_tokens()) mask.Allow(id);
  }
  dependent_.clear();
  int lists = 0;
  for (const auto& [entry, room] : used_) {
    mask.AllowAll(entry->accepted_words);
    for (int32_t t : entry->accepted_ids) mask.Allow(t);
    if (entry->counted) AllowCounted(*entry, room, mask);
    if (entry->dependent.empty()) continue;
    lists += 1;
    dependent_.insert(dependent_.end(), entry->dependent.begin(), entry->dependent.end());
  }
  if (lists > 1) std::sort(dependent_.begin(), dependent_.end());
  if (dependent_.empty()) return true;
  // Another stack may have accepted these tokens, but only the real stacks
  // decide them.
  for (const auto& [entry, room] : used_) {
    if (!entry->dependent_words.empty()) {
      mask.DisallowAll(entry->dependent_words);
      continue;
    }
    for (uint32_t node : entry->dependent) {
      for (int32_t t : trie.subtree_tokens(node)) mask.Disallow(t);
    }
  }
  // A subtree inside another is walked with it.
  size_t kept = 0;
  uint32_t covered_end = 0;
  for (uint32_t node : dependent_) {
    if (node < covered_end) continue;
    dependent_[kept++] = node;
    covered_end = trie.nodes()[node].subtree_end;
  }
  dependent_.resize(kept);
  stepper_.Reset(*compiled.grammar, compiled.limits, matcher.frames(), matcher.stacks());
  for (uint32_t node : dependent_) {
    if (ReachParentOf(trie, node)) WalkRange(trie, node, trie.nodes()[node].subtree_end, mask);
  }
  return true;
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
