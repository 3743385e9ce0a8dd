// The geometry of one KV block: how a model's K and V rows are laid out.
#pragma once

#include <cstddef>
#include <cstdint>

namespace valet {

// A block holds `block_tokens` consecutive positions of one sequence for every
// layer, as F32:
//   [n_layer][2 (K, V)][n_kv_head][block_tokens][head_dim]
// Keeping one head's positions contiguous makes the attention inner loops
// stream memory, and one block per token range is the unit that prefix
// sharing, snapshots and eviction move around.
struct KvLayout {
  int32_t n_layer = 0;
  int32_t n_kv_head = 0;
  int32_t head_dim = 0;
  int32_t block_tokens = 16;

  // Floats of one (layer, K/V, head) slab: block_tokens rows of head_dim.
  size_t head_slab_floats() const { return static_cast<size_t>(block_tokens) * head_dim; }
  size_t block_floats() const {
    return static_cast<size_t>(n_layer) * 2 * n_kv_head * head_slab_floats();
  }
  size_t block_bytes() const { return block_floats() * sizeof(float); }
  // Offset (in floats) of the slab for (layer, kv = 0 for K / 1 for V, head).
  size_t slab_offset(int32_t layer, int32_t kv, int32_t head) const {
    return ((static_cast<size_t>(layer) * 2 + kv) * n_kv_head + head) * head_slab_floats();
  }
};

}  // namespace valet
