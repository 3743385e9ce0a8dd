// The pushdown step shared by the matcher and the token mask: a set of
// stacks over a Grammar, advanced one byte at a time. A stack is its top (the
// position of the terminal it expects next) and a chain of return frames in
// an arena; stacks share frames, so branching costs one frame, not a copy.
// Running Accept and the mask's trie walk through this one function is what
// makes the mask agree exactly with feeding each token byte by byte.
#pragma once

#include <cstdint>
#include <functional>
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
// (position_masks.h). A path that returns into it waits there as a stack
// {kEscapePos, the frame} (StackScratch::returned): a token may end on it,
// and a byte more sets StackScratch::escaped. Matchers never hold one.
constexpr uint32_t kEscapePos = UINT32_MAX - 1;

struct MatcherStack {
  uint32_t pos;     // index of a kBytes symbol, kAcceptedPos, or kEscapePos (kSymbolicCount)
  uint32_t parent;  // frame to return to, or kNoFrame
  bool operator==(const MatcherStack&) const = default;
  auto operator<=>(const MatcherStack&) const = default;
};

// A count with this bit is symbolic: the position masks' precomputation runs
// a counted repetition without its bounds, counting from 1 the iterations a
// token goes through, and its exit is a stack {kEscapePos, an escape frame
// keeping the count}, so the real count can be applied at mask time.
constexpr uint32_t kSymbolicCount = 1u << 31;

struct MatcherFrame {
  uint32_t pos;     // where to continue after the referenced rule (a kRepeat: the loop)
  uint32_t parent;
  uint32_t depth;   // frames on the chain, this one included
  uint32_t count = 0;  // at a kRepeat: the iteration running under this frame, from 1
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
  uint32_t Make(uint32_t pos, uint32_t parent, uint32_t depth, uint32_t count = 0);
  // Drops the frames from `n` on (the walk leaving a path).
  void Truncate(size_t n);
  size_t size() const { return frames_.size(); }
  const MatcherFrame& operator[](uint32_t id) const { return frames_[id]; }
  const std::vector<MatcherFrame>& frames() const { return frames_; }

 private:
  struct Key {
    uint64_t pos_parent;
    uint32_t count;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.pos_parent ^ uint64_t{k.count} * 0x9E3779B97F4A7C15ull);
    }
  };
  static Key KeyOf(const MatcherFrame& f) { return {uint64_t{f.pos} << 32 | f.parent, f.count}; }

  std::vector<MatcherFrame> frames_;
  std::unordered_map<Key, uint32_t, KeyHash> index_;  // contents -> frame
};

// Scratch reused across steps (no allocation in the steady state), and what
// the steps met: the precomputed position masks are valid in a real context
// only while these peaks, shifted by that context, stay within the limits.
struct StackScratch {
  std::vector<MatcherStack> work;
  bool escaped = false;          // the last step's byte went past an escape frame
  bool returned = false;         // a step returned into an escape frame (cumulative)
  uint32_t peak_expansions = 0;  // most rule expansions in one step
  uint32_t peak_depth = 0;       // deepest frame a step tried to push
  uint64_t effort = 0;           // stacks stepped and symbols expanded, cumulative
  // The bytes that may follow where a stack waits at an escape frame: the
  // context (context_follow) or a symbolic loop's exit (exit_follow). A byte
  // among them escapes, any other ends the path (null: every byte escapes).
  const ByteSet* context_follow = nullptr;
  const ByteSet* exit_follow = nullptr;
  // A symbolic loop's exit goes on in the loop's rule, under its escape
  // frame, instead of waiting at once (when the rule is looped over in one
  // place only, so that what follows the loop is known).
  bool exit_goes_on = false;
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

// Appends to `out` (deduplicated, sorted) the stacks `items` (positions of
// any kind) expand to without input. False when a limit is exceeded.
bool ExpandStacks(const Grammar& g, const MatcherLimits& limits, std::span<const MatcherStack> items,
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
