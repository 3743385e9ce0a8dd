#include "constrain/grammar_stacks.h"

#include <algorithm>

namespace valet {
namespace {

// Pushes, for a counted repetition at `pos` whose iteration `done` has just
// ended (0: none yet) below frame `parent`, the next iteration under a frame
// counting it and, once `min` is reached, the way on past the loop. A
// symbolic count (position masks) loops without bound, and its exit is an
// escape frame keeping the count, where the path waits (a token may end
// there) or, with exit_goes_on, which the loop's rule returns into.
void RepeatFrom(const Grammar& g, const MatcherLimits& limits, FrameArena& frames, uint32_t pos,
                uint32_t parent, uint32_t done, std::vector<MatcherStack>& out, StackScratch& scratch) {
  const GrammarRepeat& rep = g.repeats[g.symbols[pos].value];
  const bool symbolic = (done & kSymbolicCount) != 0;
  const uint32_t n = done & ~kSymbolicCount;
  const uint32_t depth = parent == kNoFrame ? 1 : frames[parent].depth + 1;
  if (symbolic) {
    const uint32_t exit = frames.Make(kEscapePos, parent, depth, done);
    if (scratch.exit_goes_on) {
      scratch.work.push_back({pos + 1, exit});
    } else {
      out.push_back({kEscapePos, exit});
    }
  } else if (n >= rep.min) {
    scratch.work.push_back({pos + 1, parent});
  }
  if (!symbolic && n >= rep.max) return;
  scratch.peak_depth = std::max(scratch.peak_depth, depth);
  if (depth > limits.max_depth) return;  // too deep: this path is dropped
  const uint32_t frame = frames.Make(pos, parent, depth, done + 1);
  const uint32_t first = g.rule_alts[rep.rule];
  for (uint32_t a = g.rule_alts[rep.rule + 1]; a > first; --a) scratch.work.push_back({g.alt_starts[a - 1], frame});
}

// Expands the items on scratch.work until every stack's top is a terminal or
// the stack is accepted. Termination is guaranteed by the grammar having no
// left recursion; the expansion count bounds its cost.
bool Expand(const Grammar& g, const MatcherLimits& limits, FrameArena& frames, std::vector<MatcherStack>& out,
            StackScratch& scratch) {
  uint32_t expansions = 0;
  std::vector<MatcherStack>& work = scratch.work;
  while (!work.empty()) {
    MatcherStack s = work.back();
    work.pop_back();
    for (;;) {
      ++scratch.effort;
      const GrammarSymbol sym = g.symbols[s.pos];
      if (sym.kind == SymbolKind::kBytes) {
        out.push_back(s);
        break;
      }
      if (sym.kind == SymbolKind::kEnd) {
        if (s.parent == kNoFrame) {
          out.push_back({kAcceptedPos, kNoFrame});
          break;
        }
        const MatcherFrame& f = frames[s.parent];
        if (f.pos == kEscapePos) {  // a context the step does not know: a token may end here
          out.push_back({kEscapePos, s.parent});
          if ((f.count & kSymbolicCount) == 0) scratch.returned = true;
          break;
        }
        if (g.symbols[f.pos].kind == SymbolKind::kRepeat) {  // an iteration ended
          if (++expansions > limits.max_expansions) return false;
          scratch.peak_expansions = std::max(scratch.peak_expansions, expansions);
          RepeatFrom(g, limits, frames, f.pos, f.parent, f.count, out, scratch);
          break;
        }
        s = {f.pos, f.parent};
        continue;
      }
      if (++expansions > limits.max_expansions) return false;
      scratch.peak_expansions = std::max(scratch.peak_expansions, expansions);
      if (sym.kind == SymbolKind::kRepeat) {
        RepeatFrom(g, limits, frames, s.pos, s.parent, 0, out, scratch);
        break;
      }
      // A reference in tail position returns straight to the caller's frame,
      // so x* (right recursion) runs in constant depth.
      uint32_t parent = s.parent;
      if (g.symbols[s.pos + 1].kind != SymbolKind::kEnd) {
        const uint32_t depth = parent == kNoFrame ? 1 : frames[parent].depth + 1;
        scratch.peak_depth = std::max(scratch.peak_depth, depth);
        if (depth > limits.max_depth) break;  // too deep: this path is dropped
        parent = frames.Make(s.pos + 1, parent, depth);
      }
      const uint32_t first = g.rule_alts[sym.value];
      const uint32_t last = g.rule_alts[sym.value + 1];
      for (uint32_t a = last; a > first; --a) work.push_back({g.alt_starts[a - 1], parent});
      break;
    }
  }
  return true;
}

bool Finish(const MatcherLimits& limits, std::vector<MatcherStack>& out, size_t begin) {
  if (out.size() - begin > 1) {
    std::sort(out.begin() + static_cast<ptrdiff_t>(begin), out.end());
    out.erase(std::unique(out.begin() + static_cast<ptrdiff_t>(begin), out.end()), out.end());
  }
  return out.size() - begin <= limits.max_stacks;
}

}  // namespace

void FrameArena::Assign(std::span<const MatcherFrame> frames) {
  frames_.assign(frames.begin(), frames.end());
  index_.clear();
  for (size_t f = 0; f < frames_.size(); ++f) index_.emplace(KeyOf(frames_[f]), f);
}

uint32_t FrameArena::Make(uint32_t pos, uint32_t parent, uint32_t depth, uint32_t count) {
  const MatcherFrame frame{pos, parent, depth, count};
  auto [it, inserted] = index_.emplace(KeyOf(frame), static_cast<uint32_t>(frames_.size()));
  if (inserted) frames_.push_back(frame);
  return it->second;
}

void FrameArena::Truncate(size_t n) {
  for (size_t f = n; f < frames_.size(); ++f) index_.erase(KeyOf(frames_[f]));
  frames_.resize(n);
}

bool InitialStacks(const Grammar& g, const MatcherLimits& limits, FrameArena& frames,
                   std::vector<MatcherStack>& out, StackScratch& scratch) {
  const size_t begin = out.size();
  scratch.work.clear();
  const uint32_t first = g.rule_alts[g.root];
  for (uint32_t a = g.rule_alts[g.root + 1]; a > first; --a) {
    scratch.work.push_back({g.alt_starts[a - 1], kNoFrame});
  }
  return Expand(g, limits, frames, out, scratch) && Finish(limits, out, begin);
}

bool StepStacks(const Grammar& g, const MatcherLimits& limits, std::span<const MatcherStack> in, uint8_t b,
                FrameArena& frames, std::vector<MatcherStack>& out, StackScratch& scratch) {
  const size_t begin = out.size();
  scratch.work.clear();
  scratch.escaped = false;
  scratch.effort += in.size();
  for (size_t i = in.size(); i > 0; --i) {
    const MatcherStack& s = in[i - 1];
    if (s.pos == kEscapePos) {
      // A byte past the context's edge depends on the context, or past a
      // symbolic loop's exit on what may follow the loop.
      const bool exit = (frames[s.parent].count & kSymbolicCount) != 0;
      const ByteSet* follow = exit ? scratch.exit_follow : scratch.context_follow;
      if (follow == nullptr || follow->Has(b)) scratch.escaped = true;
      continue;
    }
    if (s.pos == kAcceptedPos) continue;
    if (g.byte_sets[g.symbols[s.pos].value].Has(b)) scratch.work.push_back({s.pos + 1, s.parent});
  }
  if (scratch.work.empty()) return true;
  return Expand(g, limits, frames, out, scratch) && Finish(limits, out, begin);
}

bool ExpandStacks(const Grammar& g, const MatcherLimits& limits, std::span<const MatcherStack> items,
                  FrameArena& frames, std::vector<MatcherStack>& out, StackScratch& scratch) {
  const size_t begin = out.size();
  scratch.work.assign(items.rbegin(), items.rend());
  scratch.escaped = false;
  return Expand(g, limits, frames, out, scratch) && Finish(limits, out, begin);
}

void CompactFrames(std::vector<MatcherStack>& stacks, std::vector<MatcherFrame>& frames) {
  // Frames only point to older frames, so a forward pass renumbers parents
  // before their children.
  std::vector<uint32_t> remap(frames.size(), kNoFrame);
  constexpr uint32_t kLive = kNoFrame - 1;
  for (const MatcherStack& s : stacks) {
    for (uint32_t f = s.parent; f != kNoFrame && remap[f] == kNoFrame; f = frames[f].parent) remap[f] = kLive;
  }
  FrameArena kept;
  for (size_t f = 0; f < frames.size(); ++f) {
    if (remap[f] != kLive) continue;
    const MatcherFrame& frame = frames[f];
    remap[f] = kept.Make(frame.pos, frame.parent == kNoFrame ? kNoFrame : remap[frame.parent], frame.depth,
                         frame.count);
  }
  for (MatcherStack& s : stacks) {
    if (s.parent != kNoFrame) s.parent = remap[s.parent];
  }
  frames = kept.frames();
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
}

}  // namespace valet
