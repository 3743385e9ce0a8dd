// Fused causal attention, softmax(q·Kᵀ)·V, over a sequence's cached K/V rows.
//
// Keys are visited in tiles of kAttnTileKeys at fixed absolute positions
// (tile i holds keys 32i .. 32i + 31 of the sequence) with an online softmax
// (running max, running sum, output rescaled per tile). Up to kAttnMaxRows
// query rows (several tokens of one sequence and the query heads that share a
// KV head) share each tile's load and widening. Every row's result is a fixed
// sequence of float operations on its own q row and its keys [0, n_keys):
// the same bits whichever rows share its call, however the prompt was split
// into steps, on however many threads, and the same bits from the scalar
// reference and the SIMD variants (the SIMD lanes and horizontal reductions
// follow the reference's order; exp2 is the same polynomial in both).
// Q8_0 rows widen to scale * int8, a product an fp32 holds exactly (11 + 7
// significant bits), so every variant's widened tile is the same floats.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"

namespace valet {

inline constexpr int kAttnTileKeys = 32;
inline constexpr int kAttnMaxRows = 64;
// Softmax in base 2: queries come multiplied by log2(e) / sqrt(head_dim).
inline constexpr float kLog2e = 1.44269504088896340736f;

struct AttentionRows {
  int n_rows = 0;                   // 1..kAttnMaxRows
  const float* const* q = nullptr;  // [n_rows] rows of head_dim, pre-scaled (kLog2e / sqrt(head_dim))
  const int32_t* n_keys = nullptr;  // [n_rows] row r attends to keys [0, n_keys[r]); n_keys[r] >= 1
  float* const* out = nullptr;      // [n_rows] rows of head_dim
  // > 0: each score s becomes softcap·tanh(s / softcap) before the softmax
  // (Gemma 2; in the scores' base-2 units, i.e. log2(e) times the natural cap).
  float softcap = 0.0f;
};

// The soft-capped score, the same scalar operations in every variant (the
// SIMD ones cap a tile's scores through it), so the bits agree.
inline float SoftCap(float s, float cap) { return cap * std::tanh(s / cap); }

struct AttentionKeys {
  GgmlType type = GgmlType::kF16;  // element type of the rows: kF32, kF16 or kQ8_0 (head_dim % 32 == 0)
  int32_t head_dim = 0;
  const void* const* k = nullptr;  // [max n_keys] key rows
  const void* const* v = nullptr;  // [max n_keys] value rows
};

// `work` holds AttentionWorkFloats(head_dim) floats.
using attention_fn = void (*)(const AttentionRows& rows, const AttentionKeys& keys, float* work);

inline size_t AttentionWorkFloats(int32_t head_dim) {
  return 2 * static_cast<size_t>(head_dim) * kAttnTileKeys + (kAttnMaxRows + 2) * kAttnTileKeys;
}

// Every variant's start: running max -inf, running sum 0 and output 0 per
// row; returns the most keys any row attends to.
inline int32_t BeginAttentionRows(const AttentionRows& rows, int32_t head_dim, float* m, float* l) {
  int32_t max_keys = 0;
  for (int r = 0; r < rows.n_rows; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
    std::fill_n(rows.out[r], head_dim, 0.0f);
    max_keys = std::max(max_keys, rows.n_keys[r]);
  }
  return max_keys;
}

// 2^x for x <= 0 to about one ulp (0 below -125): 7th-degree Taylor polynomial
// of 2^f on f = x - round(x) in [-0.5, 0.5], Horner with fused multiply-adds,
// then the exponent field raised by round(x). Shared by every variant.
inline constexpr float kExp2Poly[8] = {1.0f,
                                       0.693147180559945309f,
                                       0.240226506959100712f,
                                       0.0555041086648215800f,
                                       0.00961812910762847717f,
                                       0.00133335581464284434f,
                                       0.000154035303933816099f,
                                       0.0000152527338040598403f};
inline constexpr float kExp2Min = -125.0f;

}  // namespace valet
