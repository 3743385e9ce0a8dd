// NEON row-group prefill GEMMs with SMMLA (FEAT_I8MM) for every row-group
// type, the neon_i8mm table's, offered only when the CPU reports I8MM. The
// row groups are unpacked as for the SDOT kernels (packed_neon.h); integer
// dots are exact and each block's float steps follow the scalar reference
// (ref/packed.cpp), so these equal it bit for bit.
#include "kernels/packed_kernels.h"

#include "kernels/arm/neon.h"

#if VALET_NEON_COMPILED

#include <arm_neon.h>

#include "kernels/arm/packed_neon.h"
#include "kernels/packed_blocks.h"
#include "kernels/simd_target.h"

namespace valet::neon {

VALET_TARGET_BEGIN("arch=armv8.2-a+dotprod+i8mm")

// Prefill with SMMLA, which multiplies a 2 x 8 block
// of int8 by the transpose of another into 2 x 2 int32: rows (2p, 2p + 1) of a
// group times tokens (t, t + 1), 8 elements deep, twice SDOT's products per
// instruction. A row pair's 8 quants are two 4-byte dwords of the group's
// layout, interleaved by one zip per row pair; per output the integers and the
// float steps are the reference's.
namespace smmla {
namespace {

using namespace rowgroup;

constexpr int kTokens = 4;  // two token pairs per call

// Rows (2p, 2p + 1) x elements 8g..8g+7 from the signed quants of dwords 2g
// and 2g + 1 (SignedQuants' q[2i + h] holds rows 4h..4h+3 of dword i).
inline int8x16_t RowPair(const int8x16_t* q, int g, int p) {
  const int32x4_t a = vreinterpretq_s32_s8(q[4 * g + p / 2]), b = vreinterpretq_s32_s8(q[4 * g + 2 + p / 2]);
  return vreinterpretq_s8_s32(p % 2 == 0 ? vzip1q_s32(a, b) : vzip2q_s32(a, b));
}

// Lanes (r0 r0 r1 r1) of 4 rows' values, for row pairs 2h and 2h + 1.
inline void PairLanes(float32x4_t v, float32x4_t* out) {
  out[0] = vzip1q_f32(v, v);
  out[1] = vzip2q_f32(v, v);
}

// Lanes (t0 t1 t0 t1).
inline float32x4_t TokenLanes(float t0, float t1) {
  const float32x2_t two = {t0, t1};
  return vcombine_f32(two, two);
}

// acc[token pair][row pair] back to rows of 8 outputs per token.
inline void StorePairs(const float32x4_t (*acc)[4], float* out, int64_t ldo) {
#pragma GCC unroll 2
  for (int t = 0; t < kTokens / 2; ++t) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      vst1q_f32(out + (2 * t) * ldo + 4 * h, vuzp1q_f32(acc[t][2 * h], acc[t][2 * h + 1]));
      vst1q_f32(out + (2 * t + 1) * ldo + 4 * h, vuzp2q_f32(acc[t][2 * h], acc[t][2 * h + 1]));
    }
  }
}

template <class Packed>
void GemmPairs(int64_t n, const void* x, size_t, const void* y, size_t ldy, float* out, int64_t ldo) {
  constexpr bool kOffset = HasOffset<Packed>();
  using Act = std::conditional_t<kOffset, BlockQ8_1S, BlockQ8_0S>;
  const auto* w = static_cast<const Packed*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  float32x4_t acc[kTokens / 2][4];  // [token pair][row pair]: lanes (r0 t0, r0 t1, r1 t0, r1 t1)
#pragma GCC unroll 2
  for (int t = 0; t < kTokens / 2; ++t) {
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) acc[t][p] = vdupq_n_f32(0.0f);
  }
  const int64_t nb = n / kQK8_0;
  for (int64_t l = 0; l < nb; ++l) {
    const Packed& b = w[l];
    int8x16_t q[16];
    SignedQuants(b, q);
    int8x16_t rows[4][4];  // [element group g][row pair p]
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) rows[g][p] = RowPair(q, g, p);
    }
    float32x4_t dw[4], mw[4];
    PairLanes(LoadF16(b.d), dw);
    PairLanes(LoadF16(b.d + 4), dw + 2);
    if constexpr (kOffset) {
      PairLanes(LoadF16(b.m), mw);
      PairLanes(LoadF16(b.m + 4), mw + 2);
    }
#pragma GCC unroll 2
    for (int t = 0; t < kTokens / 2; ++t) {
      const Act& a0 = reinterpret_cast<const Act*>(yb + (2 * t) * ldy)[l];
      const Act& a1 = reinterpret_cast<const Act*>(yb + (2 * t + 1) * ldy)[l];
      int32x4_t isum[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
        const int8x16_t tokens = vcombine_s8(vld1_s8(a0.qs + 8 * g), vld1_s8(a1.qs + 8 * g));
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) isum[p] = vmmlaq_s32(isum[p], rows[g][p], tokens);
      }
      const float32x4_t dy = TokenLanes(a0.d, a1.d);
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        acc[t][p] = vfmaq_f32(acc[t][p], vmulq_f32(dw[p], dy), vcvtq_f32_s32(isum[p]));
        if constexpr (kOffset) acc[t][p] = vfmaq_f32(acc[t][p], mw[p], TokenLanes(a0.s, a1.s));
      }
    }
  }
  StorePairs(acc, out, ldo);
}

// Row lanes 0..7 as the lanes (r0 r0 r1 r1) of row pairs p = 0..3.
inline void RowPairLanes(int16x8_t v, int32x4_t* out) {
  const int32x4_t lo = vmovl_s16(vget_low_s16(v)), hi = vmovl_high_s16(v);
  out[0] = vzip1q_s32(lo, lo);
  out[1] = vzip2q_s32(lo, lo);
  out[2] = vzip1q_s32(hi, hi);
  out[3] = vzip2q_s32(hi, hi);
}

// Lanes (t0 t1 t0 t1).
inline int32x4_t TokenLanes(int32_t t0, int32_t t1) {
  const int32x2_t two = {t0, t1};
  return vcombine_s32(two, two);
}

enum class Mins { kNone, kPerSubBlock, kPerGroup };

// Per K-quant: its scales of sub-block s (lane r: row r; one per sub-block,
// or one per group of 16 elements, 2s and 2s + 1) and where its mins are.
template <class Packed>
struct SuperScales {  // Q4_K, Q5_K
  static constexpr bool kTwoScales = false;
  static constexpr Mins kMins = Mins::kPerSubBlock;
  static void Scales(const Packed& b, int s, int16x8_t* sc) {
    sc[0] = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(b.sc + 8 * s)));
  }
};
template <>
struct SuperScales<BlockIQ4_XSx8> {
  static constexpr bool kTwoScales = false;
  static constexpr Mins kMins = Mins::kNone;
  static void Scales(const BlockIQ4_XSx8& b, int s, int16x8_t* sc) { sc[0] = vmovl_s8(vld1_s8(b.sc + 8 * s)); }
};
template <class Packed>
  requires std::is_same_v<Packed, BlockQ3_Kx8> || std::is_same_v<Packed, BlockQ6_Kx8>
struct SuperScales<Packed> {
  static constexpr bool kTwoScales = true;
  static constexpr Mins kMins = Mins::kNone;
  static void Scales(const Packed& b, int s, int16x8_t* sc) {
    const int8x8x2_t raw = vld2_s8(b.sc + 16 * s);
    sc[0] = vmovl_s8(raw.val[0]);
    sc[1] = vmovl_s8(raw.val[1]);
  }
};
template <>
struct SuperScales<BlockQ2_Kx8> {  // 4-bit scale and 4-bit min per group
  static constexpr bool kTwoScales = true;
  static constexpr Mins kMins = Mins::kPerGroup;
  static void Scales(const BlockQ2_Kx8& b, int s, int16x8_t* sc) {
    const uint8x8x2_t raw = vld2_u8(b.sc + 16 * s);
    sc[0] = vreinterpretq_s16_u16(vmovl_u8(vand_u8(raw.val[0], vdup_n_u8(15))));
    sc[1] = vreinterpretq_s16_u16(vmovl_u8(vand_u8(raw.val[1], vdup_n_u8(15))));
  }
  static void GroupMins(const BlockQ2_Kx8& b, int s, int16x8_t* mn) {
    const uint8x8x2_t raw = vld2_u8(b.sc + 16 * s);
    mn[0] = vreinterpretq_s16_u16(vmovl_u8(vshr_n_u8(raw.val[0], 4)));
    mn[1] = vreinterpretq_s16_u16(vmovl_u8(vshr_n_u8(raw.val[1], 4)));
  }
};

// The K-quants with SMMLA: per sub-block the quants in SDOT's layout
// (SubBlockQuants) zipped into row pairs, 4 SMMLA per row pair and token pair
// (8 elements deep each), the 2 x 2 int32 dots times the rows' scales in
// int32, the mins against the activation sums; the integers are the
// reference's and the float steps per super-block its own.
template <class Packed>
void GemmSuperPairs(int64_t n, const void* x, size_t, const void* y, size_t ldy, float* out, int64_t ldo) {
  using K = SuperScales<Packed>;
  const auto* w = static_cast<const Packed*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  float32x4_t acc[kTokens / 2][4];  // [token pair][row pair]: lanes (r0 t0, r0 t1, r1 t0, r1 t1)
#pragma GCC unroll 2
  for (int t = 0; t < kTokens / 2; ++t) {
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) acc[t][p] = vdupq_n_f32(0.0f);
  }
  const int64_t nb = n / kQK_K;
  for (int64_t l = 0; l < nb; ++l) {
    const Packed& b = w[l];
    const BlockQ8_K* a[kTokens];
#pragma GCC unroll 4
    for (int j = 0; j < kTokens; ++j) a[j] = reinterpret_cast<const BlockQ8_K*>(yb + j * ldy) + l;
    int32x4_t isum[kTokens / 2][4], msum[kTokens / 2][4];
#pragma GCC unroll 2
    for (int t = 0; t < kTokens / 2; ++t) {
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) isum[t][p] = msum[t][p] = vdupq_n_s32(0);
    }
    for (int s = 0; s < 8; ++s) {
      int8x16_t q[16];
      SubBlockQuants(b, s, q);
      int8x16_t rows[4][4];  // [element group g][row pair p]
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) rows[g][p] = RowPair(q, g, p);
      }
      int16x8_t sc16[2];
      K::Scales(b, s, sc16);
      int32x4_t sc[2][4];  // [scale: sub-block, or its group 2s + i][row pair]
      RowPairLanes(sc16[0], sc[0]);
      if constexpr (K::kTwoScales) RowPairLanes(sc16[1], sc[1]);
#pragma GCC unroll 2
      for (int t = 0; t < kTokens / 2; ++t) {
        const int8_t* y0 = a[2 * t]->qs + 32 * s;
        const int8_t* y1 = a[2 * t + 1]->qs + 32 * s;
        int32x4_t dot[2][4];  // [16-element half, with two scales][row pair]
#pragma GCC unroll 2
        for (int i = 0; i < 2; ++i) {
#pragma GCC unroll 4
          for (int p = 0; p < 4; ++p) dot[i][p] = vdupq_n_s32(0);
        }
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g) {
          const int8x16_t tokens = vcombine_s8(vld1_s8(y0 + 8 * g), vld1_s8(y1 + 8 * g));
          const int i = K::kTwoScales ? g / 2 : 0;
#pragma GCC unroll 4
          for (int p = 0; p < 4; ++p) dot[i][p] = vmmlaq_s32(dot[i][p], rows[g][p], tokens);
        }
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
          isum[t][p] = vmlaq_s32(isum[t][p], dot[0][p], sc[0][p]);
          if constexpr (K::kTwoScales) isum[t][p] = vmlaq_s32(isum[t][p], dot[1][p], sc[1][p]);
        }
      }
      if constexpr (K::kMins == Mins::kPerGroup) {
        int16x8_t mn16[2];
        K::GroupMins(b, s, mn16);
        int32x4_t mn[2][4];
        RowPairLanes(mn16[0], mn[0]);
        RowPairLanes(mn16[1], mn[1]);
#pragma GCC unroll 2
        for (int t = 0; t < kTokens / 2; ++t) {
#pragma GCC unroll 2
          for (int i = 0; i < 2; ++i) {
            const int32x4_t bs = TokenLanes(a[2 * t]->bsums[2 * s + i], a[2 * t + 1]->bsums[2 * s + i]);
#pragma GCC unroll 4
            for (int p = 0; p < 4; ++p) msum[t][p] = vmlaq_s32(msum[t][p], mn[i][p], bs);
          }
        }
      }
    }
    if constexpr (K::kMins == Mins::kPerSubBlock) {
      int16x8_t mins[8];
      SubBlockMins(b, mins);
#pragma GCC unroll 2
      for (int t = 0; t < kTokens / 2; ++t) {
        int32x4_t m[2][2];  // [token of the pair][rows 0..3 / 4..7]
        MinSums(mins, *a[2 * t], &m[0][0], &m[0][1]);
        MinSums(mins, *a[2 * t + 1], &m[1][0], &m[1][1]);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          msum[t][2 * h] = vzip1q_s32(m[0][h], m[1][h]);
          msum[t][2 * h + 1] = vzip2q_s32(m[0][h], m[1][h]);
        }
      }
    }
    float32x4_t dw[4], dm[4];
    PairLanes(LoadF16(b.d), dw);
    PairLanes(LoadF16(b.d + 4), dw + 2);
    if constexpr (K::kMins != Mins::kNone) {
      PairLanes(LoadF16(b.dmin), dm);
      PairLanes(LoadF16(b.dmin + 4), dm + 2);
    }
#pragma GCC unroll 2
    for (int t = 0; t < kTokens / 2; ++t) {
      const float32x4_t dy = TokenLanes(a[2 * t]->d, a[2 * t + 1]->d);
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        acc[t][p] = vfmaq_f32(acc[t][p], vmulq_f32(dw[p], dy), vcvtq_f32_s32(isum[t][p]));
        if constexpr (K::kMins != Mins::kNone)
          acc[t][p] = vfmsq_f32(acc[t][p], vmulq_f32(dm[p], dy), vcvtq_f32_s32(msum[t][p]));
      }
    }
  }
  StorePairs(acc, out, ldo);
}

}  // namespace
}  // namespace smmla

VALET_TARGET_END()

TileKernel I8mmPackedGemm(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
      return {smmla::GemmPairs<BlockQ4_0x8>, kPackRows, smmla::kTokens};
    case GgmlType::kQ8_0:
      return {smmla::GemmPairs<BlockQ8_0x8>, kPackRows, smmla::kTokens};
    case GgmlType::kQ4_1:
      return {smmla::GemmPairs<BlockQ4_1x8>, kPackRows, smmla::kTokens};
    case GgmlType::kQ5_0:
      return {smmla::GemmPairs<BlockQ5_0x8>, kPackRows, smmla::kTokens};
    case GgmlType::kQ5_1:
      return {smmla::GemmPairs<BlockQ5_1x8>, kPackRows, smmla::kTokens};
    case GgmlType::kIQ4_NL:
      return {smmla::GemmPairs<BlockIQ4_NLx8>, kPackRows, smmla::kTokens};
    case GgmlType::kQ4_K:
      return {smmla::GemmSuperPairs<BlockQ4_Kx8>, kPackRows, smmla::kTokens};
    case GgmlType::kQ5_K:
      return {smmla::GemmSuperPairs<BlockQ5_Kx8>, kPackRows, smmla::kTokens};
    case GgmlType::kQ6_K:
      return {smmla::GemmSuperPairs<BlockQ6_Kx8>, kPackRows, smmla::kTokens};
    case GgmlType::kQ3_K:
      return {smmla::GemmSuperPairs<BlockQ3_Kx8>, kPackRows, smmla::kTokens};
    case GgmlType::kQ2_K:
      return {smmla::GemmSuperPairs<BlockQ2_Kx8>, kPackRows, smmla::kTokens};
    case GgmlType::kIQ4_XS:
      return {smmla::GemmSuperPairs<BlockIQ4_XSx8>, kPackRows, smmla::kTokens};
    default:
      return {};
  }
}

}  // namespace valet::neon

#else

namespace valet::neon {
TileKernel I8mmPackedGemm(GgmlType) { return {}; }
}  // namespace valet::neon

#endif
