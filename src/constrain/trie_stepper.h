// Steps a set of pushdown stacks down the byte paths of a token trie, one
// level per byte: the engine under both the next-token mask (the matcher's
// stacks) and the per-position precomputation (one grammar position over an
// escape frame). The level at depth d holds the stacks after the first d
// bytes of the current path; stepping a node at depth d replaces the levels
// from d on, so a preorder scan (or a jump to any node whose ancestors were
// stepped) reuses the shared prefix.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "constrain/grammar.h"
#include "constrain/grammar_stacks.h"

namespace valet {

class TrieStepper {
 public:
  struct Step {
    bool alive = false;    // some stack survives the byte; a new level was pushed
    bool escaped = false;  // some path's byte went past an escape frame
    bool looped = false;   // the stacks are the parent level's again (a string's characters)
  };

  // Starts at depth 0 with `stacks` over `frames`; the frames stay the base
  // every step builds on.
  void Reset(const Grammar& g, const MatcherLimits& limits, std::span<const MatcherFrame> frames,
             std::span<const MatcherStack> stacks);

  // What may follow the context's edge and a symbolic loop's exit, and
  // whether the exit goes on in the loop's rule (StackScratch's fields).
  void SetFollow(const ByteSet* context, const ByteSet* exit, bool exit_goes_on) {
    scratch_.context_follow = context;
    scratch_.exit_follow = exit;
    scratch_.exit_goes_on = exit_goes_on;
  }

  // Steps the level at depth-1 by `byte` (depth >= 1, at most the current
  // depth + 1), dropping the levels from `depth` on first.
  Step Advance(uint32_t depth, uint8_t byte);
  // Whether every byte of `bytes` leaves the deepest level's stacks unchanged
  // without escaping, so every path under it over those bytes survives.
  bool LoopsOn(const ByteSet& bytes);

  uint32_t depth() const { return static_cast<uint32_t>(levels_.size()) - 1; }
  // The deepest level's stacks, over frames().
  std::span<const MatcherStack> stacks() const;
  const FrameArena& frames() const { return arena_; }
  // Since Reset: a step exceeded a limit, and the peaks the steps reached.
  bool limit_hit() const { return limit_hit_; }
  uint32_t peak_expansions() const { return scratch_.peak_expansions; }
  uint32_t peak_depth() const { return scratch_.peak_depth; }
  uint32_t peak_stacks() const { return peak_stacks_; }
  uint64_t effort() const { return scratch_.effort; }  // StackScratch::effort, cumulative
  bool returned() const { return scratch_.returned; }  // a path waits at an escape frame

 private:
  static constexpr int32_t kUnknown = -2;  // transition not computed, or set not interned
  static constexpr int32_t kDead = -1;     // no stack survives the byte
  static constexpr size_t kMaxSets = 4096;
  struct InternedSet {
    std::vector<MatcherStack> stacks;
    std::array<int32_t, 256> next;  // by byte: a set, kDead or kUnknown
    ByteSet escapes;                // bytes whose step escaped (once next[] is known)
    ByteSet loop_known;             // bytes LoopsOn has classified
    ByteSet loop;                   // of those, the ones that leave the set unchanged
  };
  struct Level {
    int32_t set;  // an interned set, or kUnknown: then stacks_[stacks_begin, stacks_end)
    size_t stacks_begin;
    size_t stacks_end;  // stacks_ is cut back to this when a step returns here
    size_t frames_end;
  };
  int32_t Intern(std::span<const MatcherStack> stacks);
  int32_t Transition(int32_t set, uint8_t b, bool& escaped);
  bool StepRaw(std::span<const MatcherStack> in, uint8_t b, bool& escaped);

  const Grammar* g_ = nullptr;
  MatcherLimits limits_;
  uint32_t base_ = 0;  // frames below this are the caller's
  FrameArena arena_;
  std::vector<InternedSet> sets_;
  std::unordered_map<uint64_t, int32_t> set_index_;  // hash of a set's stacks -> set
  std::vector<MatcherStack> stacks_;
  std::vector<MatcherStack> next_;
  std::vector<Level> levels_;
  StackScratch scratch_;
  uint32_t peak_stacks_ = 0;
  bool limit_hit_ = false;
};

}  // namespace valet
