// Internal: the x86 tile kernels, written once and compiled twice: by
// tiles_avx2.cpp (AVX2 maddubs/madd) and by kernels_vnni.cpp (AVX-VNNI
// dpbusd/dpwssd). The includer first includes <immintrin.h>, then defines
//   VALET_TILE_NS              the namespace under valet:: to define them in
//   VALET_DOT_U8I8(acc, u, s)  acc + sums of 4 adjacent u8 * i8 products (int32 lanes)
//   VALET_DOT_I16(acc, a, b)   acc + sums of 2 adjacent i16 * i16 products (int32 lanes)
//   VALET_TILE_WIDE_U8         1 when VALET_DOT_U8I8 takes u up to 255 without saturating
// and wraps the include in `#pragma GCC target` for its instruction set.
//
// A tile keeps one accumulator per (weight row, token) pair and applies the
// per-block float operations of the AVX2 vec_dot in the same order, so each
// result equals that vec_dot's bit for bit; only the loads are shared. Both
// forms of the int8 product yield the same integers (maddubs cannot saturate:
// |x| <= 127 and one operand is at most 127 or a 4-bit/6-bit quant).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/fp16.h"
#include "kernels/kernel_table.h"
#include "kernels/quant_blocks.h"

namespace valet::VALET_TILE_NS {
namespace tiles {

inline float HsumPs(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int HsumEpi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

inline int Hsum4Epi32(__m128i s) {
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i Load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// Decode streams several weight rows per thread from memory; a software
// prefetch ~1 KiB ahead of each row is cheap insurance for the hardware
// prefetcher, which tracks a limited number of streams.
constexpr int kPrefetchBytes = 1024;

inline void Prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }

// Q8_0 and Q4_0 weights as int8 quants, or as unsigned bytes u = q + kOffset
// (the product then carries kOffset * sum(activations), subtracted up front).
// The unsigned form saves the sign shuffle per pair but needs a u8 operand of
// up to 255 for Q8_0, which only the VNNI dot takes without saturating.
struct Q8_0Weights {
  using Block = BlockQ8_0;
  static constexpr int kOffset = 128;
  static constexpr bool kUseUnsigned = VALET_TILE_WIDE_U8 != 0;
  static __m256i Quants(const Block& b) { return Load256(b.qs); }
  static __m256i Unsigned(const Block& b) {
    return _mm256_xor_si256(Load256(b.qs), _mm256_set1_epi8(-128));
  }
};

struct Q4_0Weights {
  using Block = BlockQ4_0;
  static constexpr int kOffset = 8;
  static constexpr bool kUseUnsigned = true;
  static __m256i Unsigned(const Block& b) {
    const __m128i raw = Load128(b.qs);
    // Low 128 bits: low nibbles (elements 0..15); high 128 bits: high nibbles.
    const __m256i both =
        _mm256_inserti128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
  }
  static __m256i Quants(const Block& b) {
    return _mm256_sub_epi8(Unsigned(b), _mm256_set1_epi8(8));
  }
};

// d[j][i] = scale of weight block i times scale of activation block j, each
// one f32 multiply as in vec_dot; kept in memory so that a pair's scale is a
// broadcast load rather than a shuffle.
template <int R, int C, class Block>
void PairScalesQ0(const Block* const* a, const BlockQ8_0* const* b, float (*d)[8]) {
  float dx[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) dx[i] = i < R ? _cvtsh_ss(a[i < R ? i : 0]->d) : 0.0f;
  // Built in registers: storing the row scales one by one and reloading them
  // as a vector defeats store forwarding.
  const __m256 dxv = _mm256_setr_ps(dx[0], dx[1], dx[2], dx[3], dx[4], dx[5], dx[6], dx[7]);
#pragma GCC unroll 16
  for (int j = 0; j < C; ++j)
    _mm256_store_ps(d[j], _mm256_mul_ps(dxv, _mm256_set1_ps(_cvtsh_ss(b[j]->d))));
}

// 32-element weight blocks (Q8_0, Q4_0) times Q8_0 activations.
template <class W, int R, int C>
void GemmQ0(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out,
            int64_t ldo) {
  static_assert(R <= 8, "pair scales hold 8 rows");
  using Block = typename W::Block;
  const auto* xb = static_cast<const uint8_t*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  __m256 acc[R][C];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  const int64_t nb = n / kQK8_0;
  for (int64_t l = 0; l < nb; ++l) {
    const Block* a[R];
    const BlockQ8_0* b[C];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      a[i] = reinterpret_cast<const Block*>(xb + i * ldx) + l;
      if constexpr (C == 1) Prefetch(reinterpret_cast<const uint8_t*>(a[i]) + kPrefetchBytes);
    }
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) b[j] = reinterpret_cast<const BlockQ8_0*>(yb + j * ldy) + l;
    alignas(32) float d[C][8];
    PairScalesQ0<R, C>(a, b, d);
    // Tokens are the outer loop so that one activation vector is live at a
    // time, leaving the registers to the R x C accumulators.
    alignas(32) __m256i u[R];
    if constexpr (W::kUseUnsigned) {
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) u[i] = W::Unsigned(*a[i]);
#pragma GCC unroll 16
      for (int j = 0; j < C; ++j) {
        const __m256i yq = Load256(b[j]->qs);
        // -kOffset * (sums of 4 activations): the start value of each pair's dot.
        const __m256i off = VALET_DOT_U8I8(_mm256_setzero_si256(),
                                           _mm256_set1_epi8(static_cast<char>(W::kOffset)), yq);
        const __m256i base = _mm256_sub_epi32(_mm256_setzero_si256(), off);
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          const __m256i p = VALET_DOT_U8I8(base, u[i], yq);
          acc[i][j] =
              _mm256_fmadd_ps(_mm256_broadcast_ss(&d[j][i]), _mm256_cvtepi32_ps(p), acc[i][j]);
        }
      }
    } else {
      alignas(32) __m256i q[R];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        q[i] = W::Quants(*a[i]);
        u[i] = _mm256_abs_epi8(q[i]);
      }
#pragma GCC unroll 16
      for (int j = 0; j < C; ++j) {
        const __m256i yq = Load256(b[j]->qs);
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          // x's sign moves onto y so the unsigned operand is |x|.
          const __m256i p =
              VALET_DOT_U8I8(_mm256_setzero_si256(), u[i], _mm256_sign_epi8(yq, q[i]));
          acc[i][j] =
              _mm256_fmadd_ps(_mm256_broadcast_ss(&d[j][i]), _mm256_cvtepi32_ps(p), acc[i][j]);
        }
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) out[j * ldo + i] = HsumPs(acc[i][j]);
  }
}

// Integer part of one Q4_K super-block against C activation blocks:
// acc[j] = sum over sub-blocks of scale * (nibbles . q8).
template <int C>
void Q4KIntegers(const BlockQ4_K& a, const uint8_t* sc, const BlockQ8_K* const* b, __m256i* acc) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 16
  for (int j = 0; j < C; ++j) acc[j] = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m256i q = Load256(a.qs + 32 * c);
    const __m256i lo = _mm256_and_si256(q, low4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
    const __m256i slo = _mm256_set1_epi16(sc[2 * c]);
    const __m256i shi = _mm256_set1_epi16(sc[2 * c + 1]);
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) {
      acc[j] = VALET_DOT_I16(acc[j], _mm256_maddubs_epi16(lo, Load256(b[j]->qs + 64 * c)), slo);
      acc[j] =
          VALET_DOT_I16(acc[j], _mm256_maddubs_epi16(hi, Load256(b[j]->qs + 64 * c + 32)), shi);
    }
  }
}

// Eight int32 vectors to one vector of their eight horizontal sums, in order.
inline __m256i Hsum8x8Epi32(const __m256i* v) {
  const __m256i t0 = _mm256_hadd_epi32(v[0], v[1]), t1 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i t2 = _mm256_hadd_epi32(v[4], v[5]), t3 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i u0 = _mm256_hadd_epi32(t0, t1), u1 = _mm256_hadd_epi32(t2, t3);
  return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20),
                          _mm256_permute2x128_si256(u0, u1, 0x31));
}

// Eight 4-lane int32 vectors to one vector of their eight horizontal sums, in order.
inline __m256i Pair128(__m128i lo, __m128i hi) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

inline __m256i Hsum8x4Epi32(const __m128i* v) {
  const __m256i t0 = _mm256_hadd_epi32(Pair128(v[0], v[1]), Pair128(v[2], v[3]));
  const __m256i t1 = _mm256_hadd_epi32(Pair128(v[4], v[5]), Pair128(v[6], v[7]));
  const __m256i u = _mm256_hadd_epi32(t0, t1);  // sums of 0, 2, 4, 6 | 1, 3, 5, 7
  return _mm256_permutevar8x32_epi32(u, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// The activation scales of eight Q8_K blocks as one vector.
inline __m256 Q8KScales(const BlockQ8_K* const* b) {
  return _mm256_setr_ps(b[0]->d, b[1]->d, b[2]->d, b[3]->d, b[4]->d, b[5]->d, b[6]->d, b[7]->d);
}

template <int R, int C>
void GemmQ4_K(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out,
              int64_t ldo) {
  const auto* xb = static_cast<const uint8_t*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  // Eight tokens finish a super-block in vector lanes (the same IEEE operations
  // per lane as the scalar update); other widths use the scalar update.
  constexpr bool kLanes = C == 8;
  float sum[R][C] = {};
  __m256 vsum[R];
  for (int i = 0; i < R; ++i) vsum[i] = _mm256_setzero_ps();
  for (int64_t l = 0; l < n / kQK_K; ++l) {
    const BlockQ8_K* b[C];
    __m128i bpairs[C];  // bsums[2k] + bsums[2k+1]: the activation sum of sub-block k
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) {
      b[j] = reinterpret_cast<const BlockQ8_K*>(yb + j * ldy) + l;
      bpairs[j] = _mm_hadd_epi16(Load128(b[j]->bsums), Load128(b[j]->bsums + 8));
    }
    for (int i = 0; i < R; ++i) {
      const BlockQ4_K& a = reinterpret_cast<const BlockQ4_K*>(xb + i * ldx)[l];
      if constexpr (C == 1) Prefetch(reinterpret_cast<const uint8_t*>(&a) + kPrefetchBytes);
      alignas(16) uint8_t sc[8];
      alignas(16) uint16_t mn[8];
      for (int k = 0; k < 8; ++k) {
        uint8_t m;
        UnpackQ4KScaleMin(a.scales, k, &sc[k], &m);
        mn[k] = m;
      }
      const __m128i mins = _mm_load_si128(reinterpret_cast<const __m128i*>(mn));
      __m256i acc[C];
      Q4KIntegers<C>(a, sc, b, acc);
      const float da = Fp16ToFp32(a.d);
      const float dmina = Fp16ToFp32(a.dmin);
      __m128i msums[C];
#pragma GCC unroll 16
      for (int j = 0; j < C; ++j) msums[j] = _mm_madd_epi16(mins, bpairs[j]);
      if constexpr (kLanes) {
        const __m256 bd = Q8KScales(b);
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(da), bd);
        const __m256 dmin = _mm256_mul_ps(_mm256_set1_ps(dmina), bd);
        const __m256 isum = _mm256_cvtepi32_ps(Hsum8x8Epi32(acc));
        const __m256 msum = _mm256_cvtepi32_ps(Hsum8x4Epi32(msums));
        vsum[i] = _mm256_add_ps(vsum[i],
                                _mm256_sub_ps(_mm256_mul_ps(d, isum), _mm256_mul_ps(dmin, msum)));
      } else {
#pragma GCC unroll 16
        for (int j = 0; j < C; ++j) {
          const float d = da * b[j]->d;
          const float dmin = dmina * b[j]->d;
          sum[i][j] += d * static_cast<float>(HsumEpi32(acc[j])) -
                       dmin * static_cast<float>(Hsum4Epi32(msums[j]));
        }
      }
    }
  }
  for (int i = 0; i < R; ++i) {
    if constexpr (kLanes) _mm256_storeu_ps(sum[i], vsum[i]);
    for (int j = 0; j < C; ++j) out[j * ldo + i] = sum[i][j];
  }
}

// 16 int16 lanes: the first 8 scaled by s0, the last 8 by s1 (two groups of 16 elements).
inline __m256i PairScales(int s0, int s1) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(static_cast<int16_t>(s0))),
                                 _mm_set1_epi16(static_cast<int16_t>(s1)), 1);
}

// The k-th 32 quants (unsigned, 0..63) of a 128-element half of a Q6_K block.
inline __m256i Q6KQuants(__m256i l0, __m256i l1, __m256i h, int k) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i lows = (k & 1) ? l1 : l0;
  const __m256i nib =
      k < 2 ? _mm256_and_si256(lows, low4) : _mm256_and_si256(_mm256_srli_epi16(lows, 4), low4);
  const __m256i top = _mm256_and_si256(_mm256_srli_epi16(h, 2 * k), _mm256_set1_epi8(0x03));
  return _mm256_or_si256(nib, _mm256_slli_epi16(top, 4));
}

// acc[j] = sum of scale * (q - 32) * q8 over one Q6_K super-block; the -32
// offset is folded in through the activation block sums.
template <int C>
void Q6KIntegers(const BlockQ6_K& a, const BlockQ8_K* const* b, __m256i* acc) {
  const __m256i sc32 = _mm256_slli_epi16(_mm256_cvtepi8_epi16(Load128(a.scales)), 5);
#pragma GCC unroll 16
  for (int j = 0; j < C; ++j) {
    acc[j] =
        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_madd_epi16(sc32, Load256(b[j]->bsums)));
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m256i l0 = Load256(a.ql + 64 * h), l1 = Load256(a.ql + 64 * h + 32),
                  hb = Load256(a.qh + 32 * h);
    const int8_t* sc = a.scales + 8 * h;
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m256i q = Q6KQuants(l0, l1, hb, k);
      const __m256i s = PairScales(sc[2 * k], sc[2 * k + 1]);
#pragma GCC unroll 16
      for (int j = 0; j < C; ++j) {
        acc[j] =
            VALET_DOT_I16(acc[j], _mm256_maddubs_epi16(q, Load256(b[j]->qs + 128 * h + 32 * k)), s);
      }
    }
  }
}

template <int R, int C>
void GemmQ6_K(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out,
              int64_t ldo) {
  const auto* xb = static_cast<const uint8_t*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  constexpr bool kLanes = C == 8;  // as in GemmQ4_K
  float sum[R][C] = {};
  __m256 vsum[R];
  for (int i = 0; i < R; ++i) vsum[i] = _mm256_setzero_ps();
  for (int64_t l = 0; l < n / kQK_K; ++l) {
    const BlockQ8_K* b[C];
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) b[j] = reinterpret_cast<const BlockQ8_K*>(yb + j * ldy) + l;
    for (int i = 0; i < R; ++i) {
      const BlockQ6_K& a = reinterpret_cast<const BlockQ6_K*>(xb + i * ldx)[l];
      if constexpr (C == 1) Prefetch(reinterpret_cast<const uint8_t*>(&a) + kPrefetchBytes);
      __m256i acc[C];
      Q6KIntegers<C>(a, b, acc);
      const float da = Fp16ToFp32(a.d);
      if constexpr (kLanes) {
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(da), Q8KScales(b));
        vsum[i] = _mm256_add_ps(vsum[i], _mm256_mul_ps(d, _mm256_cvtepi32_ps(Hsum8x8Epi32(acc))));
      } else {
#pragma GCC unroll 16
        for (int j = 0; j < C; ++j)
          sum[i][j] += (da * b[j]->d) * static_cast<float>(HsumEpi32(acc[j]));
      }
    }
  }
  for (int i = 0; i < R; ++i) {
    if constexpr (kLanes) _mm256_storeu_ps(sum[i], vsum[i]);
    for (int j = 0; j < C; ++j) out[j * ldo + i] = sum[i][j];
  }
}

struct F32Elems {
  using T = float;
  static __m256 Load(const float* p) { return _mm256_loadu_ps(p); }
  static float ToFloat(float v) { return v; }
};

struct F16Elems {
  using T = uint16_t;
  static __m256 Load(const uint16_t* p) { return _mm256_cvtph_ps(Load128(p)); }
  static float ToFloat(uint16_t v) { return Fp16ToFp32(v); }
};

struct Bf16Elems {
  using T = uint16_t;
  static __m256 Load(const uint16_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(Load128(p)), 16));
  }
  static float ToFloat(uint16_t v) { return Bf16ToFp32(v); }
};

// Float rows: 8 f32 lanes per pair, a scalar tail for n % 8.
template <class E, int R, int C>
void GemmFloat(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out,
               int64_t ldo) {
  using T = typename E::T;
  const T* xr[R];
  const T* yr[C];
  for (int i = 0; i < R; ++i)
    xr[i] = reinterpret_cast<const T*>(static_cast<const uint8_t*>(x) + i * ldx);
  for (int j = 0; j < C; ++j)
    yr[j] = reinterpret_cast<const T*>(static_cast<const uint8_t*>(y) + j * ldy);
  __m256 acc[R][C];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    __m256 yv[C];
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) yv[j] = E::Load(yr[j] + k);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      if constexpr (C == 1) Prefetch(reinterpret_cast<const uint8_t*>(xr[i] + k) + kPrefetchBytes);
      const __m256 xv = E::Load(xr[i] + k);
#pragma GCC unroll 16
      for (int j = 0; j < C; ++j) acc[i][j] = _mm256_fmadd_ps(xv, yv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < C; ++j) {
      float s = HsumPs(acc[i][j]);
      for (int64_t t = k; t < n; ++t) s += E::ToFloat(xr[i][t]) * E::ToFloat(yr[j][t]);
      out[j * ldo + i] = s;
    }
  }
}

// Shapes chosen to fit 16 ymm registers: R x C float accumulators plus the
// operands of one step for the 32-element and float types; the K-quants keep
// C integer accumulators per weight row and reuse each unpacked row C times.
template <int R, int C>
TileKernel Make(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
      return {GemmFloat<F32Elems, R, C>, R, C};
    case GgmlType::kF16:
      return {GemmFloat<F16Elems, R, C>, R, C};
    case GgmlType::kBF16:
      return {GemmFloat<Bf16Elems, R, C>, R, C};
    case GgmlType::kQ8_0:
      return {GemmQ0<Q8_0Weights, R, C>, R, C};
    case GgmlType::kQ4_0:
      return {GemmQ0<Q4_0Weights, R, C>, R, C};
    default:
      return {};
  }
}

template <int R, int C>
TileKernel MakeK(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_K:
      return {GemmQ4_K<R, C>, R, C};
    case GgmlType::kQ6_K:
      return {GemmQ6_K<R, C>, R, C};
    default:
      return {};
  }
}

template <gemm_fn Tile>
float DotVia1x1(int64_t n, const void* x, const void* y) {
  float out;
  Tile(n, x, 0, y, 0, &out, 0);
  return out;
}

}  // namespace tiles

TileKernel GemmTile(GgmlType type) {
  if (type == GgmlType::kQ4_K || type == GgmlType::kQ6_K) return tiles::MakeK<1, 8>(type);
  return tiles::Make<4, 3>(type);
}

TileKernel GemvTile(GgmlType type) {
  if (type == GgmlType::kQ4_K || type == GgmlType::kQ6_K) return tiles::MakeK<2, 1>(type);
  return tiles::Make<4, 1>(type);
}

}  // namespace valet::VALET_TILE_NS
