// The pushdown step shared by the matcher and the token mask: a set of
// stacks over a Grammar, advanced one byte at a time. A stack is its top (the
// position of the terminal it expects next) and a chain of return frames in
// an arena; stacks share frames, so branching costs one frame, not a copy.
// Running Accept and the mask's trie walk through this one function is what
// makes the mask agree exactly with feeding each token byte by byte.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "constrain/grammar.h"

namespace valet {

struct MatcherLimits {
  uint32_t max_stacks = 1024;        // distinct stacks alive after one byte
  uint32_t max_depth = 512;          // return frames on one stack (nesting); deeper paths are dropped
  uint32_t max_expansions = 1u << 16;  // rule expansions while advancing one byte
};

constexpr uint32_t kNoFrame = UINT32_MAX;
constexpr uint32_t kAcceptedPos = UINT32_MAX;  // the stack has matched the whole root rule
// The position of an escape frame: the unknown context below a rule, used
// when the token mask precomputes what a grammar position accepts on its own
// (position_masks.h). A path that returns into it ends there and sets
// StackScratch::escaped; matchers never hold one.
constexpr uint32_t kEscapePos = UINT32_MAX - 1;

struct MatcherStack {
  uint32_t pos;     // index of a kBytes symbol, or kAcceptedPos
  uint32_t parent;  // frame to return to, or kNoFrame
  bool operator==(const MatcherStack&) const = default;
  auto operator<=>(const MatcherStack&) const = default;
};

struct MatcherFrame {
  uint32_t pos;     // where to continue after the referenced rule
  uint32_t parent;
  uint32_t depth;   // frames on the chain, this one included
};

// The frames stacks return through. A frame is made only when no frame with
// equal contents (position, parent) exists, so equal stacks are equal values:
// paths that reach one rule position by different routes (a run of optional
// pieces) deduplicate instead of multiplying, and a step that re-enters a loop
// (each character of a string) reuses the frames it had, which is what lets the
// mask walk memoize its transitions.
class FrameArena {
 public:
  void Assign(std::span<const MatcherFrame> frames);
  uint32_t Make(uint32_t pos, uint32_t parent, uint32_t depth);
  // Drops the frames from `n` on (the walk leaving a path).
  void Truncate(size_t n);
  size_t size() const { return frames_.size(); }
  const MatcherFrame& operator[](uint32_t id) const { return frames_[id]; }
  const std::vector<MatcherFrame>& frames() const { return frames_; }

 private:
  static uint64_t Key(uint32_t pos, uint32_t parent) { return uint64_t{pos} << 32 | parent; }

  std::vector<MatcherFrame> frames_;
  std::unordered_map<uint64_t, uint32_t> index_;  // contents -> frame
};

// Scratch reused across steps (no allocation in the steady state), and what
// the steps met: the precomputed position masks are valid in a real context
// only while these peaks, shifted by that context, stay within the limits.
struct StackScratch {
  std::vector<MatcherStack> work;
  bool escaped = false;          // the last step returned into an escape frame
  uint32_t peak_expansions = 0;  // most rule expansions in one step
  uint32_t peak_depth = 0;       // deepest frame a step tried to push
  uint64_t effort = 0;           // stacks stepped and symbols expanded, cumulative
};

// Appends to `out` the stacks reachable from the root without input. False
// when a limit is exceeded.
bool InitialStacks(const Grammar& g, const MatcherLimits& limits, FrameArena& frames,
                   std::vector<MatcherStack>& out, StackScratch& scratch);

// Appends to `out` (deduplicated, sorted) the stacks `in` becomes after byte
// `b`; frames it needs are appended to `frames`. False when a limit is exceeded
// (the byte is then refused); an empty result means the byte does not fit.
bool StepStacks(const Grammar& g, const MatcherLimits& limits, std::span<const MatcherStack> in, uint8_t b,
                FrameArena& frames, std::vector<MatcherStack>& out, StackScratch& scratch);

inline bool HasAccepted(std::span<const MatcherStack> stacks) {
  for (const MatcherStack& s : stacks) {
    if (s.pos == kAcceptedPos) return true;
  }
  return false;
}

// Copies the frames `stacks` reach into a fresh arena, renumbering them (the
// arena grows with every step otherwise) and merging frames with equal
// contents, then deduplicates the stacks: equal stacks become equal values.
void CompactFrames(std::vector<MatcherStack>& stacks, std::vector<MatcherFrame>& frames);

}  // namespace valet
