// The reference fused attention (kernels/attention.h). Its loops are shaped
// like the SIMD variants' lanes: scores accumulate over head_dim one fused
// multiply-add at a time per key, and a tile's 32 values reduce as 4 vectors
// of 8 lanes, then halves of 8, 4 and 2 lanes, so a variant can match it bit
// for bit.
#include <algorithm>
#include <bit>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"
#include "kernels/ref/scalar.h"

namespace valet::scalar {
namespace {

constexpr int kT = kAttnTileKeys;

// _mm256_max_ps's rule (the second operand when the first is not greater).
inline float Max(float a, float b) { return a > b ? a : b; }

float Exp2(float x) {
  const float xc = Max(x, kExp2Min);
  const float n = std::nearbyint(xc);
  const float f = xc - n;
  float p = kExp2Poly[7];
  for (int k = 6; k >= 0; --k) p = std::fma(p, f, kExp2Poly[k]);
  const uint32_t bits = std::bit_cast<uint32_t>(p) + (static_cast<uint32_t>(static_cast<int32_t>(n)) << 23);
  return x < kExp2Min ? 0.0f : std::bit_cast<float>(bits);
}

// Reduces 32 values as the SIMD variants do: 4 vectors of 8 lanes pairwise,
// then the 8 lanes' upper half onto the lower, twice, then the last pair.
template <typename Op>
float Reduce32(const float* s, Op op) {
  float a[8];
  for (int i = 0; i < 8; ++i) a[i] = op(op(s[i], s[8 + i]), op(s[16 + i], s[24 + i]));
  for (int i = 0; i < 4; ++i) a[i] = op(a[i], a[i + 4]);
  for (int i = 0; i < 2; ++i) a[i] = op(a[i], a[i + 2]);
  return op(a[0], a[1]);
}

float Element(GgmlType type, const void* row, int32_t d) {
  if (type == GgmlType::kF16) return Fp16ToFp32(static_cast<const uint16_t*>(row)[d]);
  if (type == GgmlType::kQ8_0) {
    const BlockQ8_0& b = static_cast<const BlockQ8_0*>(row)[d / kQK8_0];
    return Fp16ToFp32(b.d) * static_cast<float>(b.qs[d % kQK8_0]);
  }
  return static_cast<const float*>(row)[d];
}

// Keys [t0, t0 + n) widened: kt as [head_dim][32] (zero past n), v as [n][head_dim].
void LoadTile(const AttentionKeys& keys, int32_t t0, int32_t n, float* kt, float* v) {
  const int32_t hd = keys.head_dim;
  for (int32_t j = 0; j < kT; ++j) {
    for (int32_t d = 0; d < hd; ++d) {
      kt[static_cast<size_t>(d) * kT + j] = j < n ? Element(keys.type, keys.k[t0 + j], d) : 0.0f;
      if (j < n) v[static_cast<size_t>(j) * hd + d] = Element(keys.type, keys.v[t0 + j], d);
    }
  }
}

// One row against one tile: scores, online-softmax update of m, l and out.
void RowTile(const float* q, const float* kt, const float* v, int32_t hd, int32_t valid, float softcap, float* m,
             float* l, float* out) {
  float s[kT];
  for (int j = 0; j < kT; ++j) {
    float acc = 0.0f;
    for (int32_t d = 0; d < hd; ++d) acc = std::fma(q[d], kt[static_cast<size_t>(d) * kT + j], acc);
    if (softcap > 0.0f) acc = SoftCap(acc, softcap);
    s[j] = j < valid ? acc : -INFINITY;
  }
  const float m_new = Max(*m, Reduce32(s, Max));
  const float alpha = Exp2(*m - m_new);
  for (int j = 0; j < kT; ++j) s[j] = Exp2(s[j] - m_new);
  *l = std::fma(*l, alpha, Reduce32(s, [](float a, float b) { return a + b; }));
  *m = m_new;
  for (int32_t d = 0; d < hd; ++d) {
    float acc = out[d] * alpha;
    for (int32_t j = 0; j < valid; ++j) acc = std::fma(s[j], v[static_cast<size_t>(j) * hd + d], acc);
    out[d] = acc;
  }
}

}  // namespace

void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work) {
  const int32_t hd = keys.head_dim;
  float* kt = work;
  float* v = kt + static_cast<size_t>(hd) * kT;
  float m[kAttnMaxRows], l[kAttnMaxRows];
  const int32_t max_keys = BeginAttentionRows(rows, hd, m, l);
  for (int32_t t0 = 0; t0 < max_keys; t0 += kT) {
    LoadTile(keys, t0, std::min(kT, max_keys - t0), kt, v);
    for (int r = 0; r < rows.n_rows; ++r) {
      if (rows.n_keys[r] <= t0) continue;
      RowTile(rows.q[r], kt, v, hd, std::min(kT, rows.n_keys[r] - t0), rows.softcap, &m[r], &l[r], rows.out[r]);
    }
  }
  for (int r = 0; r < rows.n_rows; ++r) {
    const float inv = 1.0f / l[r];
    for (int32_t d = 0; d < hd; ++d) rows.out[r][d] *= inv;
  }
}

}  // namespace valet::scalar
