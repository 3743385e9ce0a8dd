// The geometry of one KV block: how a model's K and V rows are laid out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace valet {

// Element type of the cached K and V rows. F16 halves the memory (and the
// snapshot bytes) of F32 at a rounding the quantized models' goldens allow;
// Q8_0 (ggml's 32-element blocks: an fp16 scale and 32 int8, 34 bytes) takes
// 53% of F16 and needs head_dim to be a multiple of 32; F32 is for tests that
// compare against references at 1e-4. Snapshots record the value, so the
// numbering is fixed: append, never renumber.
enum class KvType : uint8_t { kF32 = 0, kF16 = 1, kQ8_0 = 2 };

inline constexpr int32_t kKvQ8_0Block = 32;     // elements per Q8_0 block
inline constexpr size_t kKvQ8_0BlockBytes = 34;  // fp16 scale + 32 int8

// Whether rows of head_dim elements can be stored as `t` (Q8_0 rows are whole blocks).
inline bool KvTypeFits(KvType t, int32_t head_dim) {
  return head_dim > 0 && (t != KvType::kQ8_0 || head_dim % kKvQ8_0Block == 0);
}
// Bytes of one row of head_dim elements (KvTypeFits(t, head_dim) must hold).
inline size_t KvRowBytes(KvType t, int32_t head_dim) {
  const size_t hd = static_cast<size_t>(head_dim);
  switch (t) {
    case KvType::kF32: return hd * 4;
    case KvType::kF16: return hd * 2;
    case KvType::kQ8_0: return hd / kKvQ8_0Block * kKvQ8_0BlockBytes;
  }
  return 0;
}
inline const char* KvTypeName(KvType t) {
  switch (t) {
    case KvType::kF32: return "f32";
    case KvType::kF16: return "f16";
    case KvType::kQ8_0: return "q8_0";
  }
  return "?";
}
inline std::optional<KvType> ParseKvType(std::string_view name) {
  if (name == "f16") return KvType::kF16;
  if (name == "f32") return KvType::kF32;
  if (name == "q8_0") return KvType::kQ8_0;
  return std::nullopt;
}

// A block holds `block_tokens` consecutive positions of one sequence for every
// layer, as rows of head_dim elements of `type`:
//   [n_layer][2 (K, V)][n_kv_head][block_tokens][row]
// Keeping one head's positions contiguous makes the attention inner loops
// stream memory, and one block per token range is the unit that prefix
// sharing, snapshots and eviction move around. Everything is counted in
// bytes: a Q8_0 element is not a whole number of them.
struct KvLayout {
  int32_t n_layer = 0;
  int32_t n_kv_head = 0;
  int32_t head_dim = 0;
  int32_t block_tokens = 16;
  KvType type = KvType::kF16;

  // Bytes of one position's head_dim elements of one (layer, K/V, head).
  size_t row_bytes() const { return KvRowBytes(type, head_dim); }
  // Bytes of one (layer, K/V, head) slab: block_tokens rows.
  size_t head_slab_bytes() const { return static_cast<size_t>(block_tokens) * row_bytes(); }
  size_t block_bytes() const { return static_cast<size_t>(n_layer) * 2 * n_kv_head * head_slab_bytes(); }
  // Bytes of every layer's K and V rows for one position.
  size_t token_bytes() const { return static_cast<size_t>(n_layer) * 2 * n_kv_head * row_bytes(); }
  // Byte offset of the slab for (layer, kv = 0 for K / 1 for V, head).
  size_t slab_byte_offset(int32_t layer, int32_t kv, int32_t head) const {
    return ((static_cast<size_t>(layer) * 2 + kv) * n_kv_head + head) * head_slab_bytes();
  }
};

}  // namespace valet
