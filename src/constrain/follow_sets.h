// Which bytes may come first after a rule or a grammar position, in any
// derivation from the root (FOLLOW sets, over bytes). The position masks use
// them where a path leaves what an entry knows (its rule returns into the
// unknown context, or a counted loop is left): a byte no derivation can put
// there ends the path instead of deferring the token to the real stacks.
#pragma once

#include <cstdint>
#include <vector>

#include "constrain/grammar.h"

namespace valet {

class FollowSets {
 public:
  // Fixed points over the grammar, charged to `budget` (a unit per symbol
  // visited). When it runs out every set is every byte, which is always safe.
  static FollowSets Compute(const Grammar& g, uint64_t& budget);

  // The bytes that may follow an instance of rule r.
  const ByteSet& AfterRule(uint32_t r) const { return complete_ ? after_rule_[r] : all_; }
  // The bytes that may come first from position `pos` on: its alternative's
  // rest, then what follows the rule where that rest can match nothing.
  ByteSet AfterPosition(uint32_t pos) const;

 private:
  bool complete_ = false;
  ByteSet all_;
  std::vector<uint32_t> rule_of_;     // by symbol
  std::vector<ByteSet> rest_first_;   // by symbol: first bytes from there to the alternative's end
  std::vector<bool> rest_nullable_;   // by symbol: that rest can match nothing
  std::vector<ByteSet> after_rule_;   // by rule
};

}  // namespace valet
