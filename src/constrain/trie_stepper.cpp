#include "constrain/trie_stepper.h"

#include <algorithm>
#include <bit>

namespace valet {

void TrieStepper::Reset(const Grammar& g, const MatcherLimits& limits,
                        std::span<const MatcherFrame> frames,
                        std::span<const MatcherStack> stacks) {
  g_ = &g;
  limits_ = limits;
  arena_.Assign(frames);
  base_ = static_cast<uint32_t>(arena_.size());
  sets_.clear();
  set_index_.clear();
  scratch_.peak_expansions = 0;
  scratch_.peak_depth = 0;
  scratch_.returned = false;
  peak_stacks_ = static_cast<uint32_t>(stacks.size());
  limit_hit_ = false;
  stacks_.assign(stacks.begin(), stacks.end());
  levels_.clear();
  levels_.push_back({Intern(stacks_), 0, stacks_.size(), base_});
}

// A set of stacks whose frames all belong to the caller (none made by a step)
// means the same stacks wherever the scan meets it, so it gets a number and
// its transitions by byte are remembered: inside a string, each of the
// thousands of trie nodes costs one table lookup instead of a step.
int32_t TrieStepper::Intern(std::span<const MatcherStack> stacks) {
  if (sets_.size() >= kMaxSets) return kUnknown;
  uint64_t hash = 1469598103934665603ull;
  for (const MatcherStack& st : stacks) {
    hash = ((hash ^ st.pos) * 1099511628211ull ^ st.parent) * 1099511628211ull;
  }
  auto [it, inserted] = set_index_.emplace(hash, static_cast<int32_t>(sets_.size()));
  if (!inserted) {
    const std::vector<MatcherStack>& known = sets_[static_cast<size_t>(it->second)].stacks;
    return std::equal(known.begin(), known.end(), stacks.begin(), stacks.end()) ? it->second
                                                                                : kUnknown;
  }
  sets_.emplace_back();
  sets_.back().stacks.assign(stacks.begin(), stacks.end());
  sets_.back().next.fill(kUnknown);
  return it->second;
}

// One step of `in` by b into next_; false when no stack survives (a limit
// exceeded counts as that, as it refuses the byte in the matcher).
bool TrieStepper::StepRaw(std::span<const MatcherStack> in, uint8_t b, bool& escaped) {
  next_.clear();
  const bool fits = StepStacks(*g_, limits_, in, b, arena_, next_, scratch_);
  escaped = scratch_.escaped;
  if (!fits) {
    limit_hit_ = true;
    return false;
  }
  peak_stacks_ = std::max(peak_stacks_, static_cast<uint32_t>(next_.size()));
  return !next_.empty();
}

// The interned set `set` becomes after byte b, computed once: kDead, a set,
// or kUnknown when the result uses frames a step made (it is then in next_).
int32_t TrieStepper::Transition(int32_t set, uint8_t b, bool& escaped) {
  InternedSet* s = &sets_[static_cast<size_t>(set)];
  int32_t target = s->next[b];
  if (target != kUnknown) {
    escaped = s->escapes.Has(b);
    return target;
  }
  if (!StepRaw(s->stacks, b, escaped)) {
    target = kDead;
  } else if (std::all_of(next_.begin(), next_.end(), [this](const MatcherStack& st) {
               return st.parent == kNoFrame || st.parent < base_;
             })) {
    target = Intern(next_);
  }
  s = &sets_[static_cast<size_t>(set)];  // Intern may have grown sets_
  if (target != kUnknown) {
    s->next[b] = target;
    if (escaped) s->escapes.Add(b);
  }
  return target;
}

TrieStepper::Step TrieStepper::Advance(uint32_t depth, uint8_t byte) {
  levels_.resize(depth);  // back to the parent's level
  const Level parent = levels_.back();
  stacks_.resize(parent.stacks_end);
  arena_.Truncate(parent.frames_end);
  Step step;
  int32_t target = kUnknown;
  if (parent.set >= 0) {
    target = Transition(parent.set, byte, step.escaped);
  } else {
    const std::span<const MatcherStack> in(stacks_.data() + parent.stacks_begin,
                                           parent.stacks_end - parent.stacks_begin);
    if (!StepRaw(in, byte, step.escaped)) target = kDead;
  }
  if (target == kDead) return step;
  step.alive = true;
  if (target >= 0) {
    arena_.Truncate(parent.frames_end);  // whatever the step made, the set does not use
    step.looped = target == parent.set;
    levels_.push_back({target, stacks_.size(), stacks_.size(), parent.frames_end});
  } else {
    stacks_.insert(stacks_.end(), next_.begin(), next_.end());
    levels_.push_back({kUnknown, parent.stacks_end, stacks_.size(), arena_.size()});
  }
  return step;
}

std::span<const MatcherStack> TrieStepper::stacks() const {
  const Level& level = levels_.back();
  if (level.set >= 0) return sets_[static_cast<size_t>(level.set)].stacks;
  return {stacks_.data() + level.stacks_begin, level.stacks_end - level.stacks_begin};
}

bool TrieStepper::LoopsOn(const ByteSet& bytes) {
  const int32_t set = levels_.back().set;
  if (set < 0) return false;
  const size_t frames = arena_.size();
  for (size_t w = 0; w < bytes.bits.size(); ++w) {
    for (uint64_t word = bytes.bits[w]; word != 0; word &= word - 1) {
      const auto b = static_cast<uint8_t>(w * 64 + static_cast<size_t>(std::countr_zero(word)));
      InternedSet* s = &sets_[static_cast<size_t>(set)];
      if (!s->loop_known.Has(b)) {
        bool escaped = false;
        const bool loops = Transition(set, b, escaped) == set && !escaped;
        arena_.Truncate(frames);
        s = &sets_[static_cast<size_t>(set)];
        s->loop_known.Add(b);
        if (loops) s->loop.Add(b);
      }
      if (!s->loop.Has(b)) return false;
    }
  }
  return true;
}

}  // namespace valet
