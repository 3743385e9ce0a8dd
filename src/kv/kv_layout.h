// The geometry of one KV block: how a model's K and V rows are laid out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace valet {

// Element type of the cached K and V rows. F16 halves the memory (and the
// snapshot bytes) of F32 at a rounding the quantized models' goldens allow;
// F32 is for tests that compare against references at 1e-4.
enum class KvType : uint8_t { kF32, kF16 };

inline size_t KvTypeBytes(KvType t) { return t == KvType::kF16 ? 2 : 4; }
inline const char* KvTypeName(KvType t) { return t == KvType::kF16 ? "f16" : "f32"; }
inline std::optional<KvType> ParseKvType(std::string_view name) {
  if (name == "f16") return KvType::kF16;
  if (name == "f32") return KvType::kF32;
  return std::nullopt;
}

// A block holds `block_tokens` consecutive positions of one sequence for every
// layer, as elements of `type`:
//   [n_layer][2 (K, V)][n_kv_head][block_tokens][head_dim]
// Keeping one head's positions contiguous makes the attention inner loops
// stream memory, and one block per token range is the unit that prefix
// sharing, snapshots and eviction move around.
struct KvLayout {
  int32_t n_layer = 0;
  int32_t n_kv_head = 0;
  int32_t head_dim = 0;
  int32_t block_tokens = 16;
  KvType type = KvType::kF16;

  size_t elem_bytes() const { return KvTypeBytes(type); }
  // Elements of one (layer, K/V, head) slab: block_tokens rows of head_dim.
  size_t head_slab_elems() const { return static_cast<size_t>(block_tokens) * head_dim; }
  size_t block_elems() const {
    return static_cast<size_t>(n_layer) * 2 * n_kv_head * head_slab_elems();
  }
  size_t block_bytes() const { return block_elems() * elem_bytes(); }
  // Bytes of every layer's K and V rows for one position.
  size_t token_bytes() const { return block_bytes() / block_tokens; }
  // Offset (in elements) of the slab for (layer, kv = 0 for K / 1 for V, head).
  size_t slab_offset(int32_t layer, int32_t kv, int32_t head) const {
    return ((static_cast<size_t>(layer) * 2 + kv) * n_kv_head + head) * head_slab_elems();
  }
};

}  // namespace valet
