// Internal: the NEON row-group kernels (packed_neon.cpp, packed_i8mm.cpp):
// the unpacking of each row-group type into int8 lanes, and the kernels of the
// SDOT-shaped step written once over that step. Step provides DotAcc,
// DotZero(), Dot<L>(acc, w, a), which adds to row i's dot the product of its
// 4 quants in w (bytes 4i..4i+3) with activations 4L..4L+3 of a, and
// DotSum(acc), the 4 rows' dots as int32 lanes. Vectors w[2m + h] hold rows
// 4h..4h+3 of chunk m.
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_table.h"
#include "kernels/packed_blocks.h"
#include "kernels/prefetch.h"

namespace valet::neon::rowgroup {

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

// Sub-block s (32 elements) of a K-quant row group as 16 vectors of int8 in
// SignedQuants' layout (q[2i + h]: rows 4h..4h+3 of dword i), values whose dot
// is the reference's integer: Q2_K, Q4_K and Q5_K unsigned (they fit int8),
// IQ4_XS its levels, Q3_K and Q6_K centred.
template <class Packed>
  requires std::is_same_v<Packed, BlockQ4_Kx8> || std::is_same_v<Packed, BlockQ5_Kx8>
inline void SubBlockQuants(const Packed& b, int s, int8x16_t* q) {
  const uint8_t* qs = b.qs + 256 * (s / 2);
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    const uint8x16_t raw = vld1q_u8(qs + 16 * i);
    uint8x16_t u = s % 2 == 0 ? vandq_u8(raw, vdupq_n_u8(0x0f)) : vshrq_n_u8(raw, 4);
    if constexpr (std::is_same_v<Packed, BlockQ5_Kx8>) {
      // Bit s of the qh byte as bit 4 of the quant.
      const uint8x16_t h = vandq_u8(vshlq_u8(vld1q_u8(b.qh + 16 * i), vdupq_n_s8(static_cast<int8_t>(-s))),
                                    vdupq_n_u8(1));
      u = vorrq_u8(u, vshlq_n_u8(h, 4));
    }
    q[i] = vreinterpretq_s8_u8(u);
  }
}

inline void SubBlockQuants(const BlockIQ4_XSx8& b, int s, int8x16_t* q) {
  const int8x16_t values = vld1q_s8(kIQ4NLValues);
  // Low nibbles: elements 4m..4m+3 (dwords 0..3), high: 16+4m.. (dwords 4..7).
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    const uint8x16_t raw = vld1q_u8(b.qs + 128 * s + 16 * i);
    q[i] = vqtbl1q_s8(values, vandq_u8(raw, vdupq_n_u8(0x0f)));
    q[8 + i] = vqtbl1q_s8(values, vshrq_n_u8(raw, 4));
  }
}

inline void SubBlockQuants(const BlockQ2_Kx8& b, int s, int8x16_t* q) {
  const uint8_t* qs = b.qs + 256 * (s / 4);
  const int8x16_t shift = vdupq_n_s8(static_cast<int8_t>(-2 * (s % 4)));
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) q[i] = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(vld1q_u8(qs + 16 * i), shift), vdupq_n_u8(3)));
}

inline void SubBlockQuants(const BlockQ6_Kx8& b, int s, int8x16_t* q) {
  const uint8x16_t low4 = vdupq_n_u8(0x0f), low2 = vdupq_n_u8(3);
  const uint8_t* ql = b.ql + 256 * (s / 2);
  const uint8_t* qh = b.qh + 256 * (s / 4);
  const int8x16_t lo_shift = vdupq_n_s8(static_cast<int8_t>(-4 * (s % 2)));
  const int8x16_t hi_shift = vdupq_n_s8(static_cast<int8_t>(-2 * (s % 4)));
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    const uint8x16_t lo = vandq_u8(vshlq_u8(vld1q_u8(ql + 16 * i), lo_shift), low4);
    const uint8x16_t hi = vandq_u8(vshlq_u8(vld1q_u8(qh + 16 * i), hi_shift), low2);
    q[i] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, vshlq_n_u8(hi, 4))), vdupq_n_s8(32));
  }
}

inline void SubBlockQuants(const BlockQ3_Kx8& b, int s, int8x16_t* q) {
  const uint8x16_t low2 = vdupq_n_u8(3), one = vdupq_n_u8(1);
  const uint8_t* qs = b.qs + 256 * (s / 4);
  const int8x16_t lo_shift = vdupq_n_s8(static_cast<int8_t>(-2 * (s % 4)));
  const int8x16_t hi_shift = vdupq_n_s8(static_cast<int8_t>(-s));
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    const uint8x16_t lo = vandq_u8(vshlq_u8(vld1q_u8(qs + 16 * i), lo_shift), low2);
    const uint8x16_t hi = vandq_u8(vshlq_u8(vld1q_u8(b.hmask + 16 * i), hi_shift), one);
    q[i] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, vshlq_n_u8(hi, 2))), vdupq_n_s8(4));
  }
}

// mins[s], lane r: the min of Q4_K / Q5_K row r for sub-block s, as int16.
template <class Packed>
inline void SubBlockMins(const Packed& b, int16x8_t* mins) {
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const uint8x8x2_t m = vld2_u8(b.mins + 16 * k);
    mins[2 * k] = vreinterpretq_s16_u16(vmovl_u8(m.val[0]));
    mins[2 * k + 1] = vreinterpretq_s16_u16(vmovl_u8(m.val[1]));
  }
}

// m0 (rows 0..3), m1 (rows 4..7): the sum over sub-blocks s of each row's min
// times the token's sub-block sum.
inline void MinSums(const int16x8_t* mins, const BlockQ8_K& a, int32x4_t* m0, int32x4_t* m1) {
  *m0 = *m1 = vdupq_n_s32(0);
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    const auto bs = static_cast<int16_t>(a.bsums[2 * s] + a.bsums[2 * s + 1]);
    *m0 = vmlal_n_s16(*m0, vget_low_s16(mins[s]), bs);
    *m1 = vmlal_high_n_s16(*m1, mins[s], bs);
  }
}

// GCC compiles a template for the target of its definition, not of its
// caller (simd_target.h): the kernels are forced inline into the entry points
// a variant beyond the baseline defines in its own target region, where its
// Step inlines too (packed_neon.cpp's sdot::Entries).
#define VALET_ROWGROUP_INLINE [[gnu::always_inline]] inline

template <class Step>
struct Gemms {
  using Acc = typename Step::DotAcc;

  // Chunks m0..m0+3 (w[0..7]) against activation lanes 0..3 of a.
  VALET_ROWGROUP_INLINE static void Dot4(Acc& lo, Acc& hi, const int8x16_t* w, int8x16_t a) {
    lo = Step::template Dot<0>(lo, w[0], a);
    hi = Step::template Dot<0>(hi, w[1], a);
    lo = Step::template Dot<1>(lo, w[2], a);
    hi = Step::template Dot<1>(hi, w[3], a);
    lo = Step::template Dot<2>(lo, w[4], a);
    hi = Step::template Dot<2>(hi, w[5], a);
    lo = Step::template Dot<3>(lo, w[6], a);
    hi = Step::template Dot<3>(hi, w[7], a);
  }

  // Per block: the 32-element dot of each row, then acc = fma(dw * dy, isum, acc).
  VALET_ROWGROUP_INLINE static void Update(float32x4_t* acc, float32x4_t dw0, float32x4_t dw1,
                                           float dy, int32x4_t s0, int32x4_t s1) {
    const float32x4_t d = vdupq_n_f32(dy);
    acc[0] = vfmaq_f32(acc[0], vmulq_f32(dw0, d), vcvtq_f32_s32(s0));
    acc[1] = vfmaq_f32(acc[1], vmulq_f32(dw1, d), vcvtq_f32_s32(s1));
  }

  template <int C>
  VALET_ROWGROUP_INLINE static void Store(const float32x4_t (*acc)[2], float* out, int64_t ldo) {
#pragma GCC unroll 4
    for (int j = 0; j < C; ++j) {
      vst1q_f32(out + j * ldo, acc[j][0]);
      vst1q_f32(out + j * ldo + 4, acc[j][1]);
    }
  }

  // The 32-element types: the quants as signed int8 (SignedQuants), so the dot
  // is the reference's integer; per block acc = fma(dw dy, isum, acc), then for
  // Q4_1 and Q5_1 acc = fma(m, s, acc).
  template <class Packed, int C>
  VALET_ROWGROUP_INLINE static void GemmSmallx8(int64_t n, const void* x, size_t, const void* y,
                                                size_t ldy, float* out, int64_t ldo) {
    constexpr bool kOffset = HasOffset<Packed>();
    using Act = std::conditional_t<kOffset, BlockQ8_1S, BlockQ8_0S>;
    const auto* w = static_cast<const Packed*>(x);
    const auto* yb = static_cast<const uint8_t*>(y);
    float32x4_t acc[C][2];
#pragma GCC unroll 4
    for (int j = 0; j < C; ++j) acc[j][0] = acc[j][1] = vdupq_n_f32(0.0f);
    const int64_t nb = n / kQK8_0;
    for (int64_t l = 0; l < nb; ++l) {
      const Packed& b = w[l];
      if constexpr (C == 1) PrefetchAhead<sizeof(b)>(&b);
      int8x16_t q[16];
      SignedQuants(b, q);
      const float32x4_t dw0 = LoadF16(b.d), dw1 = LoadF16(b.d + 4);
      float32x4_t mw0 = vdupq_n_f32(0.0f), mw1 = mw0;
      if constexpr (kOffset) {
        mw0 = LoadF16(b.m);
        mw1 = LoadF16(b.m + 4);
      }
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) {
        const Act& a = reinterpret_cast<const Act*>(yb + j * ldy)[l];
        Acc s0 = Step::DotZero(), s1 = Step::DotZero();
        Dot4(s0, s1, q, vld1q_s8(a.qs));
        Dot4(s0, s1, q + 8, vld1q_s8(a.qs + 16));
        Update(acc[j], dw0, dw1, a.d, Step::DotSum(s0), Step::DotSum(s1));
        if constexpr (kOffset) {
          const float32x4_t sy = vdupq_n_f32(a.s);
          acc[j][0] = vfmaq_f32(acc[j][0], mw0, sy);
          acc[j][1] = vfmaq_f32(acc[j][1], mw1, sy);
        }
      }
    }
    Store<C>(acc, out, ldo);
  }

  // Q4_K and Q5_K: per sub-block the unsigned 4- or 5-bit quants' dot (both fit
  // int8) times the rows' scales; the mins against the activation sub-block
  // sums. Then acc = fma(d dy, isum, acc) and acc = fma(-(dmin dy), msum, acc).
  template <class Packed, int C>
  VALET_ROWGROUP_INLINE static void GemmQ4Q5_Kx8(int64_t n, const void* x, size_t, const void* y,
                                                 size_t ldy, float* out, int64_t ldo) {
    const auto* w = static_cast<const Packed*>(x);
    const auto* yb = static_cast<const uint8_t*>(y);
    float32x4_t acc[C][2];
#pragma GCC unroll 4
    for (int j = 0; j < C; ++j) acc[j][0] = acc[j][1] = vdupq_n_f32(0.0f);
    const int64_t nb = n / kQK_K;
    for (int64_t l = 0; l < nb; ++l) {
      const Packed& b = w[l];
      if constexpr (C == 1) PrefetchAhead<sizeof(b)>(&b);
      const BlockQ8_K* a[C];
      int32x4_t isum[C][2];
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) {
        a[j] = reinterpret_cast<const BlockQ8_K*>(yb + j * ldy) + l;
        isum[j][0] = isum[j][1] = vdupq_n_s32(0);
      }
      for (int s = 0; s < 8; ++s) {
        int8x16_t q[16];
        SubBlockQuants(b, s, q);
        const int16x8_t sc = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(b.sc + 8 * s)));
        const int32x4_t sc0 = vmovl_s16(vget_low_s16(sc)), sc1 = vmovl_high_s16(sc);
#pragma GCC unroll 4
        for (int j = 0; j < C; ++j) {
          const int8_t* ys = a[j]->qs + 32 * s;
          Acc d0 = Step::DotZero(), d1 = Step::DotZero();
          Dot4(d0, d1, q, vld1q_s8(ys));
          Dot4(d0, d1, q + 8, vld1q_s8(ys + 16));
          isum[j][0] = vmlaq_s32(isum[j][0], Step::DotSum(d0), sc0);
          isum[j][1] = vmlaq_s32(isum[j][1], Step::DotSum(d1), sc1);
        }
      }
      int16x8_t mins[8];
      SubBlockMins(b, mins);
      const float32x4_t dw0 = LoadF16(b.d), dw1 = LoadF16(b.d + 4);
      const float32x4_t dm0 = LoadF16(b.dmin), dm1 = LoadF16(b.dmin + 4);
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) {
        int32x4_t m0, m1;
        MinSums(mins, *a[j], &m0, &m1);
        const float32x4_t dy = vdupq_n_f32(a[j]->d);
        acc[j][0] = vfmaq_f32(acc[j][0], vmulq_f32(dw0, dy), vcvtq_f32_s32(isum[j][0]));
        acc[j][1] = vfmaq_f32(acc[j][1], vmulq_f32(dw1, dy), vcvtq_f32_s32(isum[j][1]));
        acc[j][0] = vfmsq_f32(acc[j][0], vmulq_f32(dm0, dy), vcvtq_f32_s32(m0));
        acc[j][1] = vfmsq_f32(acc[j][1], vmulq_f32(dm1, dy), vcvtq_f32_s32(m1));
      }
    }
    Store<C>(acc, out, ldo);
  }

  // IQ4_XS: each nibble through kIQ4NLValues (one table lookup) as a signed
  // quant; per sub-block the dot times the rows' signed scales.
  template <int C>
  VALET_ROWGROUP_INLINE static void GemmIQ4_XSx8(int64_t n, const void* x, size_t, const void* y,
                                                 size_t ldy, float* out, int64_t ldo) {
    const auto* w = static_cast<const BlockIQ4_XSx8*>(x);
    const auto* yb = static_cast<const uint8_t*>(y);
    float32x4_t acc[C][2];
#pragma GCC unroll 4
    for (int j = 0; j < C; ++j) acc[j][0] = acc[j][1] = vdupq_n_f32(0.0f);
    const int64_t nb = n / kQK_K;
    for (int64_t l = 0; l < nb; ++l) {
      const BlockIQ4_XSx8& b = w[l];
      if constexpr (C == 1) PrefetchAhead<sizeof(b)>(&b);
      const BlockQ8_K* a[C];
      int32x4_t isum[C][2];
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) {
        a[j] = reinterpret_cast<const BlockQ8_K*>(yb + j * ldy) + l;
        isum[j][0] = isum[j][1] = vdupq_n_s32(0);
      }
      for (int s = 0; s < 8; ++s) {
        int8x16_t q[16];
        SubBlockQuants(b, s, q);
        const int16x8_t sc = vmovl_s8(vld1_s8(b.sc + 8 * s));
        const int32x4_t sc0 = vmovl_s16(vget_low_s16(sc)), sc1 = vmovl_high_s16(sc);
#pragma GCC unroll 4
        for (int j = 0; j < C; ++j) {
          const int8_t* ys = a[j]->qs + 32 * s;
          Acc d0 = Step::DotZero(), d1 = Step::DotZero();
          Dot4(d0, d1, q, vld1q_s8(ys));
          Dot4(d0, d1, q + 8, vld1q_s8(ys + 16));
          isum[j][0] = vmlaq_s32(isum[j][0], Step::DotSum(d0), sc0);
          isum[j][1] = vmlaq_s32(isum[j][1], Step::DotSum(d1), sc1);
        }
      }
      const float32x4_t dw0 = LoadF16(b.d), dw1 = LoadF16(b.d + 4);
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) {
        const float32x4_t dy = vdupq_n_f32(a[j]->d);
        acc[j][0] = vfmaq_f32(acc[j][0], vmulq_f32(dw0, dy), vcvtq_f32_s32(isum[j][0]));
        acc[j][1] = vfmaq_f32(acc[j][1], vmulq_f32(dw1, dy), vcvtq_f32_s32(isum[j][1]));
      }
    }
    Store<C>(acc, out, ldo);
  }

  // Q2_K: the 2-bit quants' dot per group of 16 times the rows' 4-bit scales;
  // the 4-bit mins against the activation group sums. Then
  // acc = fma(d dy, isum, acc) and acc = fma(-(dmin dy), msum, acc).
  template <int C>
  VALET_ROWGROUP_INLINE static void GemmQ2_Kx8(int64_t n, const void* x, size_t, const void* y,
                                               size_t ldy, float* out, int64_t ldo) {
    const auto* w = static_cast<const BlockQ2_Kx8*>(x);
    const auto* yb = static_cast<const uint8_t*>(y);
    const uint8x8_t low4 = vdup_n_u8(15);
    float32x4_t acc[C][2];
#pragma GCC unroll 4
    for (int j = 0; j < C; ++j) acc[j][0] = acc[j][1] = vdupq_n_f32(0.0f);
    const int64_t nb = n / kQK_K;
    for (int64_t l = 0; l < nb; ++l) {
      const BlockQ2_Kx8& b = w[l];
      if constexpr (C == 1) PrefetchAhead<sizeof(b)>(&b);
      const BlockQ8_K* a[C];
      int32x4_t isum[C][2], msum[C][2];
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) {
        a[j] = reinterpret_cast<const BlockQ8_K*>(yb + j * ldy) + l;
        isum[j][0] = isum[j][1] = msum[j][0] = msum[j][1] = vdupq_n_s32(0);
      }
      for (int s = 0; s < 8; ++s) {
        int8x16_t q[16];
        SubBlockQuants(b, s, q);
        // Lane r: row r's scales and mins of groups 2s and 2s + 1.
        const uint8x8x2_t raw = vld2_u8(b.sc + 16 * s);
        int32x4_t sc[2][2], mn[2][2];  // [group 2s + i][rows 0..3 / 4..7]
#pragma GCC unroll 2
        for (int i = 0; i < 2; ++i) {
          const int16x8_t g = vreinterpretq_s16_u16(vmovl_u8(vand_u8(raw.val[i], low4)));
          const int16x8_t m = vreinterpretq_s16_u16(vmovl_u8(vshr_n_u8(raw.val[i], 4)));
          sc[i][0] = vmovl_s16(vget_low_s16(g));
          sc[i][1] = vmovl_high_s16(g);
          mn[i][0] = vmovl_s16(vget_low_s16(m));
          mn[i][1] = vmovl_high_s16(m);
        }
#pragma GCC unroll 4
        for (int j = 0; j < C; ++j) {
          const int8_t* ys = a[j]->qs + 32 * s;
          Acc d0 = Step::DotZero(), d1 = Step::DotZero();
          Dot4(d0, d1, q, vld1q_s8(ys));
          Acc e0 = Step::DotZero(), e1 = Step::DotZero();
          Dot4(e0, e1, q + 8, vld1q_s8(ys + 16));
          isum[j][0] = vmlaq_s32(vmlaq_s32(isum[j][0], Step::DotSum(d0), sc[0][0]), Step::DotSum(e0), sc[1][0]);
          isum[j][1] = vmlaq_s32(vmlaq_s32(isum[j][1], Step::DotSum(d1), sc[0][1]), Step::DotSum(e1), sc[1][1]);
          const int32x4_t bs0 = vdupq_n_s32(a[j]->bsums[2 * s]), bs1 = vdupq_n_s32(a[j]->bsums[2 * s + 1]);
          msum[j][0] = vmlaq_s32(vmlaq_s32(msum[j][0], mn[0][0], bs0), mn[1][0], bs1);
          msum[j][1] = vmlaq_s32(vmlaq_s32(msum[j][1], mn[0][1], bs0), mn[1][1], bs1);
        }
      }
      const float32x4_t dw0 = LoadF16(b.d), dw1 = LoadF16(b.d + 4);
      const float32x4_t dm0 = LoadF16(b.dmin), dm1 = LoadF16(b.dmin + 4);
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) {
        const float32x4_t dy = vdupq_n_f32(a[j]->d);
        acc[j][0] = vfmaq_f32(acc[j][0], vmulq_f32(dw0, dy), vcvtq_f32_s32(isum[j][0]));
        acc[j][1] = vfmaq_f32(acc[j][1], vmulq_f32(dw1, dy), vcvtq_f32_s32(isum[j][1]));
        acc[j][0] = vfmsq_f32(acc[j][0], vmulq_f32(dm0, dy), vcvtq_f32_s32(msum[j][0]));
        acc[j][1] = vfmsq_f32(acc[j][1], vmulq_f32(dm1, dy), vcvtq_f32_s32(msum[j][1]));
      }
    }
    Store<C>(acc, out, ldo);
  }

  // Q3_K and Q6_K: signed quants; per group of 16 elements (chunks 0..3 and
  // 4..7 of a sub-block) the dot times the rows' signed scales.
  template <class Packed, int C>
  VALET_ROWGROUP_INLINE static void GemmQ3Q6_Kx8(int64_t n, const void* x, size_t, const void* y,
                                                 size_t ldy, float* out, int64_t ldo) {
    const auto* w = static_cast<const Packed*>(x);
    const auto* yb = static_cast<const uint8_t*>(y);
    float32x4_t acc[C][2];
#pragma GCC unroll 4
    for (int j = 0; j < C; ++j) acc[j][0] = acc[j][1] = vdupq_n_f32(0.0f);
    const int64_t nb = n / kQK_K;
    for (int64_t l = 0; l < nb; ++l) {
      const Packed& b = w[l];
      if constexpr (C == 1) PrefetchAhead<sizeof(b)>(&b);
      const BlockQ8_K* a[C];
      int32x4_t isum[C][2];
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) {
        a[j] = reinterpret_cast<const BlockQ8_K*>(yb + j * ldy) + l;
        isum[j][0] = isum[j][1] = vdupq_n_s32(0);
      }
      for (int s = 0; s < 8; ++s) {
        int8x16_t q[16];
        SubBlockQuants(b, s, q);
        // Lane r: row r's scales of groups 2s and 2s + 1.
        const int8x8x2_t sc = vld2_s8(b.sc + 16 * s);
        const int16x8_t g0 = vmovl_s8(sc.val[0]), g1 = vmovl_s8(sc.val[1]);
        const int32x4_t g00 = vmovl_s16(vget_low_s16(g0)), g01 = vmovl_high_s16(g0);
        const int32x4_t g10 = vmovl_s16(vget_low_s16(g1)), g11 = vmovl_high_s16(g1);
#pragma GCC unroll 4
        for (int j = 0; j < C; ++j) {
          const int8_t* ys = a[j]->qs + 32 * s;
          Acc d0 = Step::DotZero(), d1 = Step::DotZero();
          Dot4(d0, d1, q, vld1q_s8(ys));
          Acc e0 = Step::DotZero(), e1 = Step::DotZero();
          Dot4(e0, e1, q + 8, vld1q_s8(ys + 16));
          isum[j][0] = vmlaq_s32(vmlaq_s32(isum[j][0], Step::DotSum(d0), g00), Step::DotSum(e0), g10);
          isum[j][1] = vmlaq_s32(vmlaq_s32(isum[j][1], Step::DotSum(d1), g01), Step::DotSum(e1), g11);
        }
      }
      const float32x4_t dw0 = LoadF16(b.d), dw1 = LoadF16(b.d + 4);
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) {
        const float32x4_t dy = vdupq_n_f32(a[j]->d);
        acc[j][0] = vfmaq_f32(acc[j][0], vmulq_f32(dw0, dy), vcvtq_f32_s32(isum[j][0]));
        acc[j][1] = vfmaq_f32(acc[j][1], vmulq_f32(dw1, dy), vcvtq_f32_s32(isum[j][1]));
      }
    }
    Store<C>(acc, out, ldo);
  }
};

#undef VALET_ROWGROUP_INLINE

// The table of a variant's entry points: Entries has GemmSmallx8<Packed, C>,
// GemmQ4Q5_Kx8<Packed, C>, GemmIQ4_XSx8<C>, GemmQ2_Kx8<C> and GemmQ3Q6_Kx8<Packed, C>.
template <class Entries, int C>
TileKernel MakeCols(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
      return {Entries::template GemmSmallx8<BlockQ4_0x8, C>, kPackRows, C};
    case GgmlType::kQ8_0:
      return {Entries::template GemmSmallx8<BlockQ8_0x8, C>, kPackRows, C};
    case GgmlType::kQ4_1:
      return {Entries::template GemmSmallx8<BlockQ4_1x8, C>, kPackRows, C};
    case GgmlType::kQ5_0:
      return {Entries::template GemmSmallx8<BlockQ5_0x8, C>, kPackRows, C};
    case GgmlType::kQ5_1:
      return {Entries::template GemmSmallx8<BlockQ5_1x8, C>, kPackRows, C};
    case GgmlType::kIQ4_NL:
      return {Entries::template GemmSmallx8<BlockIQ4_NLx8, C>, kPackRows, C};
    case GgmlType::kQ4_K:
      return {Entries::template GemmQ4Q5_Kx8<BlockQ4_Kx8, C>, kPackRows, C};
    case GgmlType::kQ5_K:
      return {Entries::template GemmQ4Q5_Kx8<BlockQ5_Kx8, C>, kPackRows, C};
    case GgmlType::kQ2_K:
      return {Entries::template GemmQ2_Kx8<C>, kPackRows, C};
    case GgmlType::kIQ4_XS:
      return {Entries::template GemmIQ4_XSx8<C>, kPackRows, C};
    case GgmlType::kQ3_K:
      return {Entries::template GemmQ3Q6_Kx8<BlockQ3_Kx8, C>, kPackRows, C};
    case GgmlType::kQ6_K:
      return {Entries::template GemmQ3Q6_Kx8<BlockQ6_Kx8, C>, kPackRows, C};
    default:
      return {};
  }
}

template <class Entries>
TileKernel Make(GgmlType type, int cols) {
  return cols == 1 ? MakeCols<Entries, 1>(type) : MakeCols<Entries, 4>(type);
}

}  // namespace valet::neon::rowgroup
