// Internal: the x86 fused attention (kernels/attention.h), bit-exact with the
// reference: a tile's 32 keys are 4 vectors of 8 lanes, scores accumulate one
// fused multiply-add per head_dim element (VALET_ATTN_PASS query rows at a
// time share the key loads), and the value sums run along head_dim in lanes,
// one key at a time. Written once and compiled twice, as x86/tiles.h: by
// attention_avx2.cpp (2 rows per pass under AVX2's 16 vector registers) and
// attention_avx512.cpp (4 with AVX-512VL's 32, which hold 4 rows' sums and
// the shared keys without reloading them). The includer first includes
// <immintrin.h>, then defines
//   VALET_ATTN_TARGET  the target features they compile for (simd_target.h)
//   VALET_ATTN_NS      the namespace under valet:: to define them in
//   VALET_ATTN_PASS    query rows per pass, 2 or 4
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/attention_tiles.h"
#include "kernels/quant_blocks.h"
#include "kernels/ref/scalar.h"
#include "kernels/simd_target.h"

VALET_TARGET_BEGIN(VALET_ATTN_TARGET)
namespace valet::VALET_ATTN_NS::attention_x86 {

constexpr int kT = kAttnTileKeys;

// The steps of the tile loop (kernels/attention_tiles.h) on 8 lanes.
struct Steps {
  using Vec = __m256;
  static constexpr int kScoreVecs = 4;
  static constexpr int kPass = VALET_ATTN_PASS;

  static __m256 Exp2(__m256 x) {
    const __m256 lo = _mm256_set1_ps(kExp2Min);
    const __m256 xc = _mm256_max_ps(x, lo);
    const __m256 n = _mm256_round_ps(xc, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 f = _mm256_sub_ps(xc, n);
    __m256 p = _mm256_set1_ps(kExp2Poly[7]);
#pragma GCC unroll 7
    for (int k = 6; k >= 0; --k) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2Poly[k]));
    const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    const __m256 r = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
    return _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), r);
  }

  // The reference's reduction order: 4 vectors pairwise, then 8 -> 4 -> 2 -> 1 lanes.
  static float ReduceMax(const __m256* s) {
    const __m256 v = _mm256_max_ps(_mm256_max_ps(s[0], s[1]), _mm256_max_ps(s[2], s[3]));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
    return _mm_cvtss_f32(h);
  }

  static float ReduceSum(const __m256* s) {
    const __m256 v = _mm256_add_ps(_mm256_add_ps(s[0], s[1]), _mm256_add_ps(s[2], s[3]));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
    return _mm_cvtss_f32(h);
  }

  static __m256 Load8(GgmlType type, const void* row, int32_t d) {
    if (type == GgmlType::kQ8_0) {
      const BlockQ8_0& b = static_cast<const BlockQ8_0*>(row)[d / kQK8_0];
      const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + d % kQK8_0));
      // F16C's conversion, exact like the reference's Fp16ToFp32 (and one instruction).
      return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b.d)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)));
    }
    if (type == GgmlType::kF16) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + d)));
    }
    return _mm256_loadu_ps(static_cast<const float*>(row) + d);
  }

  // In place: r[i] lane j becomes r[j] lane i.
  static void Transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; ++i) {
      u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
      u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
      u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
      u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
    }
    for (int i = 0; i < 4; ++i) {
      r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
      r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
  }

  // Keys [t0, t0 + n) widened: kt as [head_dim][32] (zero past n), v as [n][head_dim].
  static void LoadTile(const AttentionKeys& keys, int32_t t0, int32_t n, float* kt, float* v) {
    const int32_t hd = keys.head_dim;
    for (int32_t j0 = 0; j0 < kT; j0 += 8) {
      for (int32_t d = 0; d < hd; d += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; ++i) {
          r[i] = j0 + i < n ? Load8(keys.type, keys.k[t0 + j0 + i], d) : _mm256_setzero_ps();
        }
        Transpose8(r);
        for (int i = 0; i < 8; ++i) _mm256_storeu_ps(kt + static_cast<size_t>(d + i) * kT + j0, r[i]);
      }
    }
    for (int32_t j = 0; j < n; ++j) {
      for (int32_t d = 0; d < hd; d += 8) _mm256_storeu_ps(v + static_cast<size_t>(j) * hd + d, Load8(keys.type, keys.v[t0 + j], d));
    }
  }

  // Scores of R rows (1, 2 or 4) against the tile: s[r][4] vectors of 8 keys.
  template <int R>
  static void Scores(const float* const* q, const float* kt, int32_t hd, __m256 s[][4]) {
    __m256 acc[R][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) acc[r][i] = _mm256_setzero_ps();
    for (int32_t d = 0; d < hd; ++d) {
      const float* k = kt + static_cast<size_t>(d) * kT;
      const __m256 k0 = _mm256_loadu_ps(k), k1 = _mm256_loadu_ps(k + 8), k2 = _mm256_loadu_ps(k + 16),
                   k3 = _mm256_loadu_ps(k + 24);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m256 qd = _mm256_broadcast_ss(q[r] + d);
        acc[r][0] = _mm256_fmadd_ps(qd, k0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(qd, k1, acc[r][1]);
        acc[r][2] = _mm256_fmadd_ps(qd, k2, acc[r][2]);
        acc[r][3] = _mm256_fmadd_ps(qd, k3, acc[r][3]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) s[r][i] = acc[r][i];
  }

  // For R rows: out[r][0 .. 8 NV) = out * alpha[r] + sum over keys j < valid[r]
  // of p[r][j] v[j]; the keys all rows have are shared loads.
  template <int R, int NV>
  static void WeightedValues(const float* const* p, const float* v, int32_t hd, const int32_t* valid, const float* alpha,
                             float* const* out, int32_t d) {
    __m256 acc[R][NV];
    int32_t common = valid[0];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      common = std::min(common, valid[r]);
#pragma GCC unroll 8
      for (int i = 0; i < NV; ++i) acc[r][i] = _mm256_mul_ps(_mm256_loadu_ps(out[r] + d + 8 * i), _mm256_set1_ps(alpha[r]));
    }
    for (int32_t j = 0; j < common; ++j) {
      const float* vj = v + static_cast<size_t>(j) * hd + d;
      __m256 pj[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) pj[r] = _mm256_broadcast_ss(p[r] + j);
#pragma GCC unroll 8
      for (int i = 0; i < NV; ++i) {
        const __m256 vv = _mm256_loadu_ps(vj + 8 * i);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) acc[r][i] = _mm256_fmadd_ps(pj[r], vv, acc[r][i]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      for (int32_t j = common; j < valid[r]; ++j) {
        const float* vj = v + static_cast<size_t>(j) * hd + d;
        const __m256 pj = _mm256_broadcast_ss(p[r] + j);
#pragma GCC unroll 8
        for (int i = 0; i < NV; ++i) acc[r][i] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + 8 * i), acc[r][i]);
      }
#pragma GCC unroll 8
      for (int i = 0; i < NV; ++i) _mm256_storeu_ps(out[r] + d + 8 * i, acc[r][i]);
    }
  }

  // One row's online-softmax step from its scores s (soft-capped when asked,
  // keys past `valid` masked): p = 2^(s - new max), m and l updated; returns
  // the factor that rescales the row's earlier sums.
  static float Softmax(__m256 s[4], int32_t valid, float softcap, float* m, float* l, float* p) {
    if (softcap > 0.0f) {
      alignas(32) float capped[kT];
      for (int i = 0; i < 4; ++i) _mm256_store_ps(capped + 8 * i, s[i]);
      for (float& x : capped) x = SoftCap(x, softcap);
      for (int i = 0; i < 4; ++i) s[i] = _mm256_load_ps(capped + 8 * i);
    }
    const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 limit = _mm256_set1_ps(static_cast<float>(valid));
    const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
    for (int i = 0; i < 4; ++i) {
      const __m256 in = _mm256_cmp_ps(_mm256_add_ps(lane, _mm256_set1_ps(8.0f * i)), limit, _CMP_LT_OQ);
      s[i] = _mm256_blendv_ps(neg_inf, s[i], in);
    }
    const float tile_max = ReduceMax(s);
    const float mn = *m > tile_max ? *m : tile_max;
    const float alpha = _mm_cvtss_f32(_mm256_castps256_ps128(Exp2(_mm256_set1_ps(*m - mn))));
    const __m256 mv = _mm256_set1_ps(mn);
    for (int i = 0; i < 4; ++i) s[i] = Exp2(_mm256_sub_ps(s[i], mv));
    *l = std::fma(*l, alpha, ReduceSum(s));
    *m = mn;
    for (int i = 0; i < 4; ++i) _mm256_storeu_ps(p + 8 * i, s[i]);
    return alpha;
  }

  // The value sums of R rows, head_dim in chunks that keep the sums in registers.
  template <int R>
  static void AllValues(const float* const* p, const float* v, int32_t hd, const int32_t* valid, const float* alpha,
                        float* const* out) {
    int32_t d = 0;
    if constexpr (R == 1) {
      for (; d + 64 <= hd; d += 64) WeightedValues<1, 8>(p, v, hd, valid, alpha, out, d);
      for (; d + 16 <= hd; d += 16) WeightedValues<1, 2>(p, v, hd, valid, alpha, out, d);
    } else {
      for (; d + 32 <= hd; d += 32) WeightedValues<R, 4>(p, v, hd, valid, alpha, out, d);  // R x 4 sums
    }
    for (; d < hd; d += 8) WeightedValues<R, 1>(p, v, hd, valid, alpha, out, d);
  }

  // out *= inv, as the reference's last step.
  static void Scale(float* out, int32_t hd, float inv) {
    for (int32_t d = 0; d < hd; d += 8) _mm256_storeu_ps(out + d, _mm256_mul_ps(_mm256_loadu_ps(out + d), _mm256_set1_ps(inv)));
  }
};

// The 8-lane kernel, or the reference for head sizes it cannot take.
inline void Run(const AttentionRows& rows, const AttentionKeys& keys, float* work) {
  if (keys.head_dim % 8 != 0) {
    scalar::Attention(rows, keys, work);
    return;
  }
  attention_tiles::TileLoop<Steps>(rows, keys, work);
}

}  // namespace valet::VALET_ATTN_NS::attention_x86
VALET_TARGET_END()
