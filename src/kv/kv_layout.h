// The geometry of one KV block: how a model's K and V rows are laid out.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
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

// A block holds `block_tokens` consecutive positions of one sequence for a
// slice of the layers, as rows of head_dim elements of `type`:
//   [slice_layers][2 (K, V)][n_kv_head][block_tokens][row]
// Keeping one head's positions contiguous makes the attention inner loops
// stream memory, and one block per token range is the unit that prefix
// sharing, snapshots and eviction move around. Everything is counted in
// bytes: a Q8_0 element is not a whole number of them.
//
// Without windowed layers one slice holds every layer. A model with
// sliding-window layers (window > 0; layer l is windowed when
// l % window_period < window_period - 1, ModelConfig::sliding) splits its
// layers into slices of one kind each, all of the same size (the greatest
// common divisor of the two kinds' counts, so blocks stay interchangeable in
// one pool): full slices first, then windowed ones. A windowed slice keeps
// only the blocks its next query can see (KvSequence), which is where the
// memory of a long context goes down.
struct KvLayout {
  int32_t n_layer = 0;
  int32_t n_kv_head = 0;
  int32_t head_dim = 0;
  int32_t block_tokens = 16;
  KvType type = KvType::kF16;
  // Positions a windowed layer's query sees, its own included; 0: no windowed layers.
  int32_t window = 0;
  int32_t window_period = 0;

  bool windowed(int32_t layer) const { return window > 0 && layer % window_period < window_period - 1; }
  int32_t n_full_layers() const { return window > 0 ? n_layer / window_period : n_layer; }
  int32_t n_windowed_layers() const { return n_layer - n_full_layers(); }
  int32_t slice_layers() const { return std::gcd(n_full_layers(), n_windowed_layers()); }
  int32_t n_slices() const { return n_layer / slice_layers(); }
  int32_t n_full_slices() const { return n_full_layers() / slice_layers(); }
  bool windowed_slice(int32_t slice) const { return slice >= n_full_slices(); }
  // Where `layer` lives: its slice and its index inside the slice's blocks.
  struct Slot {
    int32_t slice = 0;
    int32_t sub = 0;
  };
  Slot slot(int32_t layer) const {
    if (window == 0) return {0, layer};
    // Full layers sit at l % period == period - 1: layer/period of them come before `layer`.
    const int32_t full_before = layer / window_period;
    const int32_t k = windowed(layer) ? layer - full_before : full_before;
    const int32_t base = windowed(layer) ? n_full_slices() : 0;
    return {base + k / slice_layers(), k % slice_layers()};
  }
  // First position a windowed layer still needs when the sequence holds
  // `n_tokens` positions: the next query, at n_tokens, sees window - 1 of them.
  int32_t window_start(int32_t n_tokens) const {
    return window > 0 ? std::max(0, n_tokens - window + 1) : 0;
  }

  // Bytes of one position's head_dim elements of one (layer, K/V, head).
  size_t row_bytes() const { return KvRowBytes(type, head_dim); }
  // Bytes of one (layer, K/V, head) slab: block_tokens rows.
  size_t head_slab_bytes() const { return static_cast<size_t>(block_tokens) * row_bytes(); }
  size_t block_bytes() const { return static_cast<size_t>(slice_layers()) * 2 * n_kv_head * head_slab_bytes(); }
  // Bytes of every layer's K and V rows for one position.
  size_t token_bytes() const { return static_cast<size_t>(n_layer) * 2 * n_kv_head * row_bytes(); }
  // Byte offset of the slab for (layer `sub` of a block's slice, kv = 0 for K / 1 for V, head).
  size_t slab_byte_offset(int32_t sub, int32_t kv, int32_t head) const {
    return ((static_cast<size_t>(sub) * 2 + kv) * n_kv_head + head) * head_slab_bytes();
  }
  // Bytes of the rows a sequence exports for positions [begin, end) (KvSequence::ExportRows):
  // every position for full layers, from window_start(end) on for windowed ones.
  size_t rows_bytes(int32_t begin, int32_t end) const {
    const size_t layer_rows = static_cast<size_t>(2) * n_kv_head * row_bytes();
    const int32_t windowed_begin = std::max(begin, window_start(end));
    return layer_rows * (static_cast<size_t>(n_full_layers()) * (end - begin) +
                         static_cast<size_t>(n_windowed_layers()) * std::max(0, end - windowed_begin));
  }
  // Pool bytes one sequence of `n_tokens` positions holds once they are
  // computed: every block of the full slices, and a windowed slice's blocks
  // from window_start(n_tokens) on; with `step_tokens`, the most it holds
  // while its last step of that many positions runs (the window before the
  // step and the step's own positions).
  size_t sequence_bytes(int32_t n_tokens, int32_t step_tokens = 0) const {
    if (n_tokens <= 0) return 0;
    const size_t blocks = static_cast<size_t>((n_tokens + block_tokens - 1) / block_tokens);
    const int32_t before_step = std::max(0, n_tokens - step_tokens);
    const size_t windowed_blocks = blocks - static_cast<size_t>(window_start(before_step) / block_tokens);
    return block_bytes() * (blocks * n_full_slices() + windowed_blocks * (n_slices() - n_full_slices()));
  }
};

}  // namespace valet
