// NEON row-group kernels. A 16-byte load of a 32-byte chunk holds 4 quants of
// 4 rows (rows 0..3 or 4..7 of the group), so one SDOT with 4 activations
// broadcast from a lane (vdotq_laneq_s32) yields those 4 rows' partial dots
// in its 4 int32 lanes, and a block's float update of 8 outputs is two
// multiply-adds per token. Without FEAT_DotProd the same step is SMULL +
// pairwise adds. The kernels are written once (packed_neon_body.inc) and
// compiled twice: plain armv8-a, and under the dotprod target for the
// neon_dotprod table, which is offered only when the CPU reports SDOT. The
// neon_i8mm table adds SMMLA prefill GEMMs for the 32-element types.
//
// Integer dots are exact; each block's scale product and multiply-add follow
// the scalar reference (packed_scalar.cpp), so every variant equals it bit for
// bit.
#include "kernels/packed_kernels.h"

#include "kernels/kernels_neon.h"

#if VALET_NEON_COMPILED

#include <arm_neon.h>

#include <type_traits>

#include "kernels/packed_blocks.h"
#include "kernels/prefetch.h"
#include "kernels/simd_target.h"

namespace valet::neon {
namespace {

// f16 lanes widened to f32: exact, as Fp16ToFp32.
inline float32x4_t LoadF16(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

// Decode streams one row group per call: as on AVX2 (packed_avx2.cpp), every
// cache line of the bytes 2 KiB ahead (kernels/prefetch.h).
template <size_t Bytes>
inline void PrefetchAhead(const void* block) {
  PrefetchBlockAhead<Bytes, 2048>(block);
}

// Q4_1 and Q5_1 add m * s per block (their quants are unsigned).
template <class Packed>
constexpr bool HasOffset() {
  return requires(const Packed& p) { p.m; };
}

// A 32-element type's row-group block as signed int8 quants whose dot is the
// reference's integer: Q4_0 and Q5_0 centred (less 8, less 16), IQ4_NL
// through its table, Q4_1/Q5_1 as they are. q[2i + h] holds rows 4h..4h+3's
// 4 quants that meet activation dword i (elements 4i..4i+3).
template <class Packed>
inline void SignedQuants(const Packed& b, int8x16_t* q) {
  if constexpr (std::is_same_v<Packed, BlockQ8_0x8>) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) q[i] = vld1q_s8(b.qs + 16 * i);
    return;
  } else {
    constexpr bool kFiveBits = requires(const Packed& p) { p.qh; };
    constexpr int kCentre = HasOffset<Packed>() || std::is_same_v<Packed, BlockIQ4_NLx8> ? 0 : kFiveBits ? 16 : 8;
    const uint8x16_t low4 = vdupq_n_u8(0x0f), one = vdupq_n_u8(1);
    // Vector 2m + h of qs: rows 4h..4h+3, low nibbles dword m, high nibbles dword 4 + m.
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) {
      const uint8x16_t raw = vld1q_u8(b.qs + 16 * v);
      uint8x16_t ul = vandq_u8(raw, low4), uh = vshrq_n_u8(raw, 4);
      if constexpr (kFiveBits) {
        // qh bytes of rows 4h..4h+3: bit m for the low element, 4 + m for the high one.
        const uint8x16_t qh = vld1q_u8(b.qh + 16 * (v % 2));
        const int m = v / 2;
        ul = vorrq_u8(ul, vshlq_n_u8(vandq_u8(vshlq_u8(qh, vdupq_n_s8(static_cast<int8_t>(-m))), one), 4));
        uh = vorrq_u8(uh, vshlq_n_u8(vandq_u8(vshlq_u8(qh, vdupq_n_s8(static_cast<int8_t>(-4 - m))), one), 4));
      }
      if constexpr (std::is_same_v<Packed, BlockIQ4_NLx8>) {
        const int8x16_t values = vld1q_s8(kIQ4NLValues);
        q[v] = vqtbl1q_s8(values, ul);
        q[8 + v] = vqtbl1q_s8(values, uh);
      } else {
        q[v] = vsubq_s8(vreinterpretq_s8_u8(ul), vdupq_n_s8(kCentre));
        q[8 + v] = vsubq_s8(vreinterpretq_s8_u8(uh), vdupq_n_s8(kCentre));
      }
    }
  }
}

}  // namespace

namespace plain {
namespace {

// Pair sums, SADALP folding each SMULL in: lane 2i + k of lo holds the sum of
// row i's products 2k and 2k + 1 for rows 0..1, of hi for rows 2..3; one
// pairwise add at the end of a dot makes the 4 rows' sums.
struct DotAcc {
  int32x4_t lo, hi;
};

inline DotAcc DotZero() { return {vdupq_n_s32(0), vdupq_n_s32(0)}; }

template <int L>
inline DotAcc Dot(DotAcc acc, int8x16_t w, int8x16_t a) {
  const int8x16_t b = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(a), L));
  return {vpadalq_s16(acc.lo, vmull_s8(vget_low_s8(w), vget_low_s8(b))),
          vpadalq_s16(acc.hi, vmull_high_s8(w, b))};
}

inline int32x4_t DotSum(DotAcc acc) { return vpaddq_s32(acc.lo, acc.hi); }

#include "kernels/packed_neon_body.inc"

}  // namespace
}  // namespace plain

VALET_TARGET_BEGIN("arch=armv8.2-a+dotprod")

namespace sdot {
namespace {

using DotAcc = int32x4_t;

inline DotAcc DotZero() { return vdupq_n_s32(0); }

template <int L>
inline DotAcc Dot(DotAcc acc, int8x16_t w, int8x16_t a) {
  return vdotq_laneq_s32(acc, w, a, L);
}

inline int32x4_t DotSum(DotAcc acc) { return acc; }

#include "kernels/packed_neon_body.inc"

}  // namespace
}  // namespace sdot

VALET_TARGET_END()

VALET_TARGET_BEGIN("arch=armv8.2-a+dotprod+i8mm")

// Prefill of the 32-element types with SMMLA, which multiplies a 2 x 8 block
// of int8 by the transpose of another into 2 x 2 int32: rows (2p, 2p + 1) of a
// group times tokens (t, t + 1), 8 elements deep, twice SDOT's products per
// instruction. A row pair's 8 quants are two 4-byte dwords of the group's
// layout, interleaved by one zip per row pair; per output the integers and the
// float steps are the reference's.
namespace smmla {
namespace {

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
#pragma GCC unroll 2
  for (int t = 0; t < kTokens / 2; ++t) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      vst1q_f32(out + (2 * t) * ldo + 4 * h, vuzp1q_f32(acc[t][2 * h], acc[t][2 * h + 1]));
      vst1q_f32(out + (2 * t + 1) * ldo + 4 * h, vuzp2q_f32(acc[t][2 * h], acc[t][2 * h + 1]));
    }
  }
}

}  // namespace
}  // namespace smmla

VALET_TARGET_END()

TileKernel PackedTile(GgmlType type, int cols) { return plain::Make(type, cols); }
TileKernel DotprodPackedTile(GgmlType type, int cols) { return sdot::Make(type, cols); }

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
    default:
      return {};
  }
}

}  // namespace valet::neon

#else

namespace valet::neon {
TileKernel PackedTile(GgmlType, int) { return {}; }
TileKernel DotprodPackedTile(GgmlType, int) { return {}; }
TileKernel I8mmPackedGemm(GgmlType) { return {}; }
}  // namespace valet::neon

#endif
