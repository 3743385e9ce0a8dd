// How far a forward step stopped between layers got for one sequence
// (LlamaContext::Forward keeps it, snapshots carry it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace valet {

// What a step stopped between layers leaves of one sequence's share: its
// tokens, the layer it stopped before and the residual stream of its rows
// there. The layers before `layer` have written those tokens' K/V rows past
// the sequence's committed length; a later step given the same tokens goes
// on from `layer` to the same bits as a step never stopped, as long as
// nothing cleared or rewrote the sequence's rows in between.
struct StepCut {
  int32_t layer = 0;  // 0: nothing kept
  std::vector<int32_t> tokens;
  std::vector<float> hidden;  // [tokens, n_embd]

  bool empty() const { return layer == 0; }
  size_t bytes() const { return tokens.size() * sizeof(int32_t) + hidden.size() * sizeof(float); }
  void Clear() { *this = StepCut{}; }
};

}  // namespace valet
