// NEON fused attention (kernels/attention.h), bit-exact with the reference.
// The reference's lanes are 8 wide (AVX2's), so a tile's 32 keys are 4 pairs
// of float32x4 here and every reduction pairs them in that order. Scores
// accumulate one fused multiply-add per head_dim element (two query rows at
// a time share the key loads); the value sums run along head_dim in lanes,
// one key at a time.
#include "kernels/arm/neon.h"

#if VALET_NEON_COMPILED

#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/attention.h"
#include "kernels/attention_tiles.h"
#include "kernels/quant_blocks.h"
#include "kernels/ref/scalar.h"

namespace valet::neon {
namespace {

constexpr int kT = kAttnTileKeys;
constexpr int kV = kT / 4;  // float32x4 per tile row of scores

// The steps of the tile loop (attention_tiles.h) on 4 lanes.
struct Steps {
  using Vec = float32x4_t;
  static constexpr int kScoreVecs = kV;
  static constexpr int kPass = 2;

  // The reference's Max (the second operand unless the first is greater).
  static float32x4_t Max(float32x4_t a, float32x4_t b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }

  static float32x4_t Exp2(float32x4_t x) {
    const float32x4_t lo = vdupq_n_f32(kExp2Min);
    const float32x4_t xc = Max(x, lo);
    const float32x4_t n = vrndnq_f32(xc);  // to nearest, ties to even, as nearbyint
    const float32x4_t f = vsubq_f32(xc, n);
    float32x4_t p = vdupq_n_f32(kExp2Poly[7]);
    for (int k = 6; k >= 0; --k) p = vfmaq_f32(vdupq_n_f32(kExp2Poly[k]), p, f);
    const int32x4_t e = vshlq_n_s32(vcvtq_s32_f32(n), 23);
    const float32x4_t r = vreinterpretq_f32_s32(vaddq_s32(vreinterpretq_s32_f32(p), e));
    return vbslq_f32(vcltq_f32(x, lo), vdupq_n_f32(0.0f), r);
  }

  // s[0..7] as the reference's 4 vectors of 8 lanes (s[2i], s[2i + 1] are
  // lanes 0-3 and 4-7 of vector i): pairwise across vectors, then lanes
  // 8 -> 4 -> 2 -> 1. `vop` and `op` are the same operation on vectors and floats.
  template <typename VOp, typename Op>
  static float Reduce32(const float32x4_t* s, VOp vop, Op op) {
    const float32x4_t lo = vop(vop(s[0], s[2]), vop(s[4], s[6]));
    const float32x4_t hi = vop(vop(s[1], s[3]), vop(s[5], s[7]));
    float b[4];
    vst1q_f32(b, vop(lo, hi));
    return op(op(b[0], b[2]), op(b[1], b[3]));
  }

  static float ReduceMax(const float32x4_t* s) {
    return Reduce32(s, [](float32x4_t a, float32x4_t b) { return Max(a, b); }, [](float a, float b) { return a > b ? a : b; });
  }
  static float ReduceSum(const float32x4_t* s) {
    return Reduce32(s, [](float32x4_t a, float32x4_t b) { return vaddq_f32(a, b); }, [](float a, float b) { return a + b; });
  }

  // Widens 4 elements [d, d + 4) of a row; every conversion is exact, as the reference's.
  static float32x4_t Load4(GgmlType type, const void* row, int32_t d) {
    if (type == GgmlType::kQ8_0) {
      const BlockQ8_0& b = static_cast<const BlockQ8_0*>(row)[d / kQK8_0];
      int32_t four;  // 4 quants: an 8-byte load could pass the row's end
      std::memcpy(&four, b.qs + d % kQK8_0, sizeof(four));
      const int16x4_t q16 = vget_low_s16(vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four))));
      const float scale = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(b.d))), 0);
      return vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(q16)), scale);
    }
    if (type == GgmlType::kF16) {
      return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(row) + d)));
    }
    return vld1q_f32(static_cast<const float*>(row) + d);
  }

  static void WidenRows(const AttentionKeys& keys, const void* const* rows, int32_t t0, int32_t n,
                        float* out) {
    const int32_t hd = keys.head_dim;
    for (int32_t j = 0; j < n; ++j) {
      for (int32_t d = 0; d < hd; d += 4) vst1q_f32(out + static_cast<size_t>(j) * hd + d, Load4(keys.type, rows[t0 + j], d));
    }
  }

  // Keys [t0, t0 + n) widened: kt as [head_dim][32] (zero past n), v as
  // [n][head_dim]. The keys are widened into v's space first and transposed
  // from there in 4 x 4 blocks.
  static void LoadTile(const AttentionKeys& keys, int32_t t0, int32_t n, float* kt, float* v) {
    const int32_t hd = keys.head_dim;
    WidenRows(keys, keys.k, t0, n, v);
    for (int32_t j0 = 0; j0 < kT; j0 += 4) {
      for (int32_t d = 0; d < hd; d += 4) {
        float32x4_t r[4];
        for (int i = 0; i < 4; ++i) r[i] = j0 + i < n ? vld1q_f32(v + static_cast<size_t>(j0 + i) * hd + d) : vdupq_n_f32(0.0f);
        const float32x4x2_t t01 = vtrnq_f32(r[0], r[1]), t23 = vtrnq_f32(r[2], r[3]);
        const float32x4_t c[4] = {vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0])),
                                  vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1])),
                                  vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0])),
                                  vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1]))};
        for (int i = 0; i < 4; ++i) vst1q_f32(kt + static_cast<size_t>(d + i) * kT + j0, c[i]);
      }
    }
    WidenRows(keys, keys.v, t0, n, v);
  }

  // Scores of R rows (1 or 2) against the tile: s[r][8] vectors of 4 keys.
  template <int R>
  static void Scores(const float* const* q, const float* kt, int32_t hd, float32x4_t s[][kV]) {
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < kV; ++i) s[r][i] = vdupq_n_f32(0.0f);
    for (int32_t d = 0; d < hd; ++d) {
      const float* k = kt + static_cast<size_t>(d) * kT;
      float32x4_t kv[kV];
      for (int i = 0; i < kV; ++i) kv[i] = vld1q_f32(k + 4 * i);
      for (int r = 0; r < R; ++r) {
        const float32x4_t qd = vdupq_n_f32(q[r][d]);
        for (int i = 0; i < kV; ++i) s[r][i] = vfmaq_f32(s[r][i], qd, kv[i]);
      }
    }
  }

  // One row's online-softmax step from its scores s (soft-capped when asked,
  // keys past `valid` masked): p = 2^(s - new max), m and l updated; returns
  // the factor that rescales the row's earlier sums.
  static float Softmax(float32x4_t s[kV], int32_t valid, float softcap, float* m, float* l, float* p) {
    float tile[kT];
    for (int i = 0; i < kV; ++i) vst1q_f32(tile + 4 * i, s[i]);
    for (int j = 0; j < kT; ++j) {
      if (softcap > 0.0f) tile[j] = SoftCap(tile[j], softcap);
      if (j >= valid) tile[j] = -INFINITY;
    }
    for (int i = 0; i < kV; ++i) s[i] = vld1q_f32(tile + 4 * i);
    const float tile_max = ReduceMax(s);
    const float mn = *m > tile_max ? *m : tile_max;
    const float alpha = vgetq_lane_f32(Exp2(vdupq_n_f32(*m - mn)), 0);
    const float32x4_t mv = vdupq_n_f32(mn);
    for (int i = 0; i < kV; ++i) s[i] = Exp2(vsubq_f32(s[i], mv));
    *l = std::fma(*l, alpha, ReduceSum(s));
    *m = mn;
    for (int i = 0; i < kV; ++i) vst1q_f32(p + 4 * i, s[i]);
    return alpha;
  }

  // For R rows: out[r][d .. d + 4 NV) = out * alpha[r] + sum over keys j <
  // valid[r] of p[r][j] v[j], in key order; the keys all rows have are shared loads.
  template <int R, int NV>
  static void WeightedValues(const float* const* p, const float* v, int32_t hd, const int32_t* valid, const float* alpha,
                             float* const* out, int32_t d) {
    float32x4_t acc[R][NV];
    int32_t common = valid[0];
    for (int r = 0; r < R; ++r) {
      common = std::min(common, valid[r]);
      for (int i = 0; i < NV; ++i) acc[r][i] = vmulq_n_f32(vld1q_f32(out[r] + d + 4 * i), alpha[r]);
    }
    for (int32_t j = 0; j < common; ++j) {
      const float* vj = v + static_cast<size_t>(j) * hd + d;
      for (int i = 0; i < NV; ++i) {
        const float32x4_t vv = vld1q_f32(vj + 4 * i);
        for (int r = 0; r < R; ++r) acc[r][i] = vfmaq_n_f32(acc[r][i], vv, p[r][j]);
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int32_t j = common; j < valid[r]; ++j) {
        const float* vj = v + static_cast<size_t>(j) * hd + d;
        for (int i = 0; i < NV; ++i) acc[r][i] = vfmaq_n_f32(acc[r][i], vld1q_f32(vj + 4 * i), p[r][j]);
      }
      for (int i = 0; i < NV; ++i) vst1q_f32(out[r] + d + 4 * i, acc[r][i]);
    }
  }

  // The value sums of 1 or 2 rows, head_dim in chunks that keep the sums in registers.
  template <int R>
  static void AllValues(const float* const* p, const float* v, int32_t hd, const int32_t* valid, const float* alpha,
                        float* const* out) {
    int32_t d = 0;
    for (; d + 32 <= hd; d += 32) WeightedValues<R, 8>(p, v, hd, valid, alpha, out, d);
    for (; d < hd; d += 4) WeightedValues<R, 1>(p, v, hd, valid, alpha, out, d);
  }

  // out *= inv, as the reference's last step.
  static void Scale(float* out, int32_t hd, float inv) {
    for (int32_t d = 0; d < hd; d += 4) vst1q_f32(out + d, vmulq_n_f32(vld1q_f32(out + d), inv));
  }
};

}  // namespace

void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work) {
  if (keys.head_dim % 4 != 0) {
    scalar::Attention(rows, keys, work);
    return;
  }
  attention_tiles::TileLoop<Steps>(rows, keys, work);
}

}  // namespace valet::neon

#endif  // VALET_NEON_COMPILED
