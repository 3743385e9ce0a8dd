#include "constrain/position_masks.h"

#include <algorithm>
#include <bit>

#include "constrain/follow_sets.h"
#include "constrain/grammar_matcher.h"
#include "constrain/trie_stepper.h"
#include "constrain/work_budget.h"

namespace valet {
namespace {

// The return position above each rule's instances, as a small lattice:
// unknown (unreachable so far), one position, the root (no frame) or many.
constexpr uint32_t kUnreached = UINT32_MAX;
constexpr uint32_t kMany = UINT32_MAX - 1;
constexpr uint32_t kRootFrame = UINT32_MAX - 2;
// kCounted + r: returns into a counted repetition's frame of rule r.
constexpr uint32_t kCounted = 1u << 30;
constexpr size_t kMaxChain = 8;  // forced frames followed above a position
constexpr uint32_t kNeedsContext = UINT32_MAX;
constexpr uint32_t kMaxPremadeIterations = 256;

bool IsCounted(uint32_t v) { return v >= kCounted && v < kRootFrame; }

uint32_t Join(uint32_t a, uint32_t b) {
  if (a == kUnreached) return b;
  if (b == kUnreached || a == b) return a;
  return kMany;
}

// What the loops over one rule have in common (a rule repeated in several
// places shares its entries).
struct CountedRule {
  uint32_t loop_pos = kNoFrame;  // one kRepeat position over the rule
  uint32_t loops = 0;            // how many
  uint32_t max_room = 0;         // the largest maximum of its loops
  // The bytes that may come first after any of its loops or, for one loop,
  // after the rule holding it (its exit then goes on there).
  ByteSet follow;
};

struct RuleGraph {
  std::vector<uint32_t> rule_of;  // by symbol
  std::vector<uint32_t> parent;   // by rule: the lattice value
  std::vector<CountedRule> counted;  // by rule
};

// A rule's instances return to the position after a non-tail reference to it,
// or, for a tail reference (no frame pushed), wherever the referring rule's
// instance returns. Each rule's value rises at most three times, so the
// worklist ends after O(references) pushes.
RuleGraph AnalyzeParents(const Grammar& g) {
  RuleGraph rg;
  rg.rule_of.assign(g.symbols.size(), 0);
  rg.parent.assign(g.rule_count(), kUnreached);
  std::vector<std::vector<uint32_t>> tail_callees(g.rule_count());
  for (uint32_t r = 0; r < g.rule_count(); ++r) {
    for (uint32_t a = g.rule_alts[r]; a < g.rule_alts[r + 1]; ++a) {
      for (uint32_t p = g.alt_starts[a];; ++p) {
        rg.rule_of[p] = r;
        const GrammarSymbol sym = g.symbols[p];
        if (sym.kind == SymbolKind::kEnd) break;
        if (sym.kind == SymbolKind::kRepeat) {
          const uint32_t rule = CalleeOf(g.repeats, sym);
          rg.parent[rule] = Join(rg.parent[rule], kCounted + rule);
          continue;
        }
        if (sym.kind != SymbolKind::kRule) continue;
        if (g.symbols[p + 1].kind == SymbolKind::kEnd) {
          tail_callees[r].push_back(sym.value);
        } else {
          rg.parent[sym.value] = Join(rg.parent[sym.value], p + 1);
        }
      }
    }
  }
  rg.parent[g.root] = Join(rg.parent[g.root], kRootFrame);
  std::vector<uint32_t> work;
  for (uint32_t r = 0; r < g.rule_count(); ++r) {
    if (rg.parent[r] != kUnreached) work.push_back(r);
  }
  while (!work.empty()) {
    const uint32_t r = work.back();
    work.pop_back();
    for (uint32_t callee : tail_callees[r]) {
      const uint32_t joined = Join(rg.parent[callee], rg.parent[r]);
      if (joined == rg.parent[callee]) continue;
      rg.parent[callee] = joined;
      work.push_back(callee);
    }
  }
  return rg;
}

// For each rule a counted repetition loops over: a loop position, how many,
// the largest maximum, and what may follow (CountedRule::follow).
void AnalyzeLoops(const Grammar& g, const FollowSets& follow, RuleGraph& rg) {
  rg.counted.assign(g.rule_count(), {});
  for (uint32_t pos = 0; pos < g.symbols.size(); ++pos) {
    if (g.symbols[pos].kind != SymbolKind::kRepeat) continue;
    const GrammarRepeat& rep = g.repeats[g.symbols[pos].value];
    CountedRule& c = rg.counted[rep.rule];
    c.loop_pos = pos;
    c.loops += 1;
    c.max_room = std::max(c.max_room, rep.max);
    c.follow.Merge(follow.AfterPosition(pos + 1));
  }
  for (CountedRule& c : rg.counted) {
    if (c.loops == 1) c.follow = follow.AfterRule(rg.rule_of[c.loop_pos]);
  }
}

// The forced chain above `pos`; false when the position is unreachable.
bool ForcedChain(const RuleGraph& rg, uint32_t pos, PositionMask& out) {
  uint32_t rule = rg.rule_of[pos];
  if (rg.parent[rule] == kUnreached) return false;
  while (out.chain.size() < kMaxChain) {
    const uint32_t up = rg.parent[rule];
    if (up == kRootFrame) {
      out.rooted = true;
      break;
    }
    if (IsCounted(up)) {
      out.counted = true;
      out.counted_rule = up - kCounted;
      break;
    }
    if (up == kMany || up == kUnreached) break;
    out.chain.push_back(up);
    rule = rg.rule_of[up];
  }
  return true;
}

class EntryBuilder {
 public:
  EntryBuilder(const Grammar& g, const TokenTrie& trie, const MatcherLimits& limits)
      : g_(g), trie_(trie), limits_(limits) {}

  // Runs every text token from `pos` over its forced chain (and an escape
  // frame below it unless rooted). False when a matcher limit was met on the
  // way (the entry would not hold in every context) or the budget ran out.
  bool Run(uint32_t pos, const RuleGraph& rg, const FollowSets& follow, PositionMask& entry,
           uint64_t& budget);

 private:
  void Start(uint32_t pos, const PositionMask& entry);
  bool Scan(PositionMask& entry, uint64_t& budget);
  uint32_t Need();
  bool Store(PositionMask& entry, uint64_t& budget);
  void StoreCounted(PositionMask& entry);
  bool AcceptTokens(std::span<const int32_t> tokens, uint64_t& budget);
  bool CountTokens(std::span<const int32_t> tokens, uint32_t need, uint64_t& budget);

  const Grammar& g_;
  const TokenTrie& trie_;
  const MatcherLimits& limits_;
  TrieStepper stepper_;
  std::vector<MatcherFrame> frames_;
  std::vector<uint64_t> words_;
  size_t accepted_ = 0;
  const CountedRule* loop_ = nullptr;  // the entry's loop when counted
  ByteSet context_follow_;
  std::vector<uint32_t> exits_;
  std::vector<std::pair<uint32_t, int32_t>> counted_;  // need, token
};

bool EntryBuilder::AcceptTokens(std::span<const int32_t> tokens, uint64_t& budget) {
  if (!ChargeWork(budget, tokens.size())) return false;
  for (int32_t t : tokens) {
    uint64_t& w = words_[static_cast<size_t>(t) >> 6];
    const uint64_t bit = uint64_t{1} << (t & 63);
    accepted_ += (w & bit) == 0;
    w |= bit;
  }
  return true;
}

bool EntryBuilder::CountTokens(std::span<const int32_t> tokens, uint32_t need, uint64_t& budget) {
  if (need <= 1) return AcceptTokens(tokens, budget);
  if (!ChargeWork(budget, tokens.size())) return false;
  for (int32_t t : tokens) counted_.push_back({need, t});
  return true;
}

// The stack the position's instances have: its top, the forced frames, and
// the escape frame (depth 0: a real context's depth shifts every frame above),
// with a counted loop's frame in its first symbolic iteration between them.
void EntryBuilder::Start(uint32_t pos, const PositionMask& entry) {
  frames_.clear();
  counted_.clear();
  uint32_t parent = kNoFrame;
  if (!entry.rooted) {
    frames_.push_back({kEscapePos, kNoFrame, 0});
    parent = 0;
  }
  if (entry.counted) {
    // The loop's frames for the iterations a token can go through and their
    // exits, made here rather than by the steps: the stepper then remembers
    // the transitions of sets using them, as it does inside a string.
    const uint32_t iterations = std::min(loop_->max_room, kMaxPremadeIterations) + 1;
    for (uint32_t n = 1; n <= iterations; ++n) {
      frames_.push_back({kEscapePos, 0, 1, kSymbolicCount | n});
      frames_.push_back({loop_->loop_pos, 0, 1, kSymbolicCount | n});
    }
    parent = 2;  // the first iteration's
  }
  for (size_t i = entry.chain.size(); i > 0; --i) {
    const uint32_t depth = parent == kNoFrame ? 1 : frames_[parent].depth + 1;
    frames_.push_back({entry.chain[i - 1], parent, depth});
    parent = static_cast<uint32_t>(frames_.size() - 1);
  }
  const MatcherStack start{pos, parent};
  stepper_.Reset(g_, limits_, frames_, std::span<const MatcherStack>(&start, 1));
  stepper_.SetFollow(&context_follow_, entry.counted ? &loop_->follow : nullptr, entry.exit_goes_on);
  words_.assign((static_cast<size_t>(trie_.vocab_size()) + 63) / 64, 0);
  accepted_ = 0;
}

// How many iterations the deepest level's stacks need (the header's k): the
// fewest a stack inside the loop has run, or an exit has completed; an exit
// must also fit at the loop's minimum wherever it is the only way, which holds
// for any loop when the exits go up to one short of the inside's count.
// kNeedsContext otherwise, or for exits after iterations with gaps.
uint32_t EntryBuilder::Need() {
  uint32_t inside = kNeedsContext;
  exits_.clear();
  const FrameArena& frames = stepper_.frames();
  for (const MatcherStack& s : stepper_.stacks()) {
    uint32_t f = s.parent;
    while (f != kNoFrame && (frames[f].count & kSymbolicCount) == 0) f = frames[f].parent;
    if (f == kNoFrame) return kNeedsContext;
    const uint32_t n = frames[f].count & ~kSymbolicCount;
    if (frames[f].pos == kEscapePos) {  // past the loop's exit
      exits_.push_back(n);
    } else {
      inside = std::min(inside, n);
    }
  }
  if (exits_.empty()) return inside;
  std::sort(exits_.begin(), exits_.end());
  exits_.erase(std::unique(exits_.begin(), exits_.end()), exits_.end());
  const uint32_t lo = exits_.front();
  const uint32_t hi = exits_.back();
  if (hi - lo + 1 != exits_.size()) return kNeedsContext;
  if (lo < inside && (inside == kNeedsContext || hi + 1 < inside)) return kNeedsContext;
  return std::min(inside, lo);
}

// The mask walk's scan, except that a subtree whose byte went past the
// escape frame is recorded whole as context-dependent instead of being
// followed, and a counted entry keeps each token's need instead of one
// verdict; a need past every loop's maximum refuses the subtree (needs only
// grow down a path).
bool EntryBuilder::Scan(PositionMask& entry, uint64_t& budget) {
  const std::span<const TokenTrieNode> nodes = trie_.nodes();
  const std::span<const int32_t> tokens = trie_.node_tokens();
  uint64_t effort = stepper_.effort();
  for (size_t i = 1; i < nodes.size();) {
    const TokenTrieNode& node = nodes[i];
    const TrieStepper::Step step = stepper_.Advance(node.depth, node.byte);
    // A node costs one unit, plus the stacks and symbols its step went
    // through when it was not a remembered transition.
    if (!ChargeWork(budget, 1 + stepper_.effort() - effort)) return false;
    effort = stepper_.effort();
    if (!step.alive && !step.escaped) {
      i = node.subtree_end;
      continue;
    }
    const uint32_t need = step.escaped ? kNeedsContext : entry.counted ? Need() : 1;
    if (need == kNeedsContext) {
      entry.dependent.push_back(static_cast<uint32_t>(i));
      i = node.subtree_end;
    } else if (entry.counted && need > loop_->max_room) {
      i = node.subtree_end;
    } else if (step.looped && node.below != kNoSummary && stepper_.LoopsOn(trie_.below(node.below))) {
      if (!CountTokens(trie_.subtree_tokens(static_cast<uint32_t>(i)), need, budget)) return false;
      i = node.subtree_end;
    } else {
      const auto own = tokens.subspan(node.tokens_begin, node.tokens_end - node.tokens_begin);
      if (!CountTokens(own, need, budget)) return false;
      ++i;
    }
  }
  return true;
}

void EntryBuilder::StoreCounted(PositionMask& entry) {
  std::sort(counted_.begin(), counted_.end());
  entry.counted_ids.reserve(counted_.size());
  for (const auto& [need, token] : counted_) {
    while (entry.counted_ends.size() + 2 < need) {
      entry.counted_ends.push_back(static_cast<uint32_t>(entry.counted_ids.size()));
    }
    entry.counted_ids.push_back(token);
  }
  entry.counted_ends.push_back(static_cast<uint32_t>(entry.counted_ids.size()));
  if (counted_.size() > words_.size()) {
    entry.counted_words.assign(words_.size(), 0);
    for (int32_t t : entry.counted_ids) entry.counted_words[static_cast<size_t>(t) >> 6] |= uint64_t{1} << (t & 63);
  }
}

// Keeps the accepted tokens and the context-dependent ones each in the
// smaller of a bitset and a list.
bool EntryBuilder::Store(PositionMask& entry, uint64_t& budget) {
  size_t dependent_tokens = 0;
  for (uint32_t node : entry.dependent) dependent_tokens += trie_.subtree_tokens(node).size();
  if (!ChargeWork(budget, dependent_tokens)) return false;
  if (dependent_tokens > words_.size()) {
    entry.dependent_words.assign(words_.size(), 0);
    for (uint32_t node : entry.dependent) {
      for (int32_t t : trie_.subtree_tokens(node)) {
        entry.dependent_words[static_cast<size_t>(t) >> 6] |= uint64_t{1} << (t & 63);
      }
    }
  }
  if (accepted_ * 32 < words_.size() * 64) {
    entry.accepted_ids.reserve(accepted_);
    for (size_t w = 0; w < words_.size(); ++w) {
      for (uint64_t word = words_[w]; word != 0; word &= word - 1) {
        entry.accepted_ids.push_back(static_cast<int32_t>(w * 64) + std::countr_zero(word));
      }
    }
  } else {
    entry.accepted_words = words_;
  }
  if (entry.counted) StoreCounted(entry);
  return true;
}

bool EntryBuilder::Run(uint32_t pos, const RuleGraph& rg, const FollowSets& follow, PositionMask& entry,
                       uint64_t& budget) {
  // The bitset's clearing and final pass are work too: a grammar of many
  // strict positions must not cost vocabulary-sized passes for free.
  if (!ChargeWork(budget, 2 * ((static_cast<uint64_t>(trie_.vocab_size()) + 63) / 64))) return false;
  loop_ = entry.counted ? &rg.counted[entry.counted_rule] : nullptr;
  entry.exit_goes_on = entry.counted && loop_->loops == 1;
  // The rule whose instance returns into the context.
  context_follow_ = follow.AfterRule(rg.rule_of[entry.chain.empty() ? pos : entry.chain.back()]);
  Start(pos, entry);
  if (!Scan(entry, budget) || stepper_.limit_hit()) return false;
  entry.returns = stepper_.returned();
  entry.peak_expansions = stepper_.peak_expansions();
  entry.peak_stacks = stepper_.peak_stacks();
  entry.peak_depth = stepper_.peak_depth();
  return Store(entry, budget);
}

}  // namespace

size_t PositionMask::memory_bytes() const {
  return sizeof(PositionMask) + chain.size() * sizeof(uint32_t) +
         accepted_words.size() * sizeof(uint64_t) + accepted_ids.size() * sizeof(int32_t) +
         dependent.size() * sizeof(uint32_t) + dependent_words.size() * sizeof(uint64_t) +
         counted_ids.size() * sizeof(int32_t) + counted_ends.size() * sizeof(uint32_t) +
         counted_words.size() * sizeof(uint64_t);
}

std::shared_ptr<const PositionMasks> PositionMasks::Build(const Grammar& g, const TokenTrie& trie,
                                                          const MatcherLimits& limits,
                                                          const PositionMaskLimits& bounds) {
  auto out = std::make_shared<PositionMasks>();
  out->index_.assign(g.symbols.size(), -1);
  RuleGraph rg = AnalyzeParents(g);
  uint64_t steps = bounds.max_steps;
  const FollowSets follow = FollowSets::Compute(g, steps);
  AnalyzeLoops(g, follow, rg);
  EntryBuilder builder(g, trie, limits);
  for (uint32_t pos = 0; pos < g.symbols.size(); ++pos) {
    if (g.symbols[pos].kind != SymbolKind::kBytes) continue;
    ++out->positions_;
    PositionMask entry;
    if (!ForcedChain(rg, pos, entry)) continue;
    if (steps == 0 || out->memory_bytes_ >= bounds.max_bytes) continue;
    if (!builder.Run(pos, rg, follow, entry, steps)) continue;
    out->memory_bytes_ += entry.memory_bytes();
    out->index_[pos] = static_cast<int32_t>(out->masks_.size());
    out->masks_.push_back(std::move(entry));
  }
  out->steps_ = bounds.max_steps - steps;
  out->memory_bytes_ += out->index_.size() * sizeof(int32_t);
  return out;
}

void PrecomputePositionMasks(CompiledGrammar& compiled, const PositionMaskLimits& bounds) {
  if (compiled.grammar == nullptr || compiled.trie == nullptr) return;
  compiled.positions =
      PositionMasks::Build(*compiled.grammar, *compiled.trie, compiled.limits, bounds);
}

}  // namespace valet
