// The unit budget that bounds precomputation over untrusted grammars
// (PositionMaskLimits::max_steps): each piece of work takes its units first.
#pragma once

#include <cstdint>

namespace valet {

// Takes n units from the budget; false (the budget then spent) when short.
inline bool ChargeWork(uint64_t& budget, uint64_t n) {
  if (budget < n) {
    budget = 0;
    return false;
  }
  budget -= n;
  return true;
}

}  // namespace valet
