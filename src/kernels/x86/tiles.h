// Internal: the x86 tile kernels, written once and compiled twice: by
// tiles_avx2.cpp (AVX2 maddubs/madd) and by tiles_avxvnni.cpp (AVX-VNNI
// dpbusd/dpwssd). This header holds the float and 32-element block types;
// tiles_k.h, included after it, the super-block types and the GemmTile /
// GemvTile entry points. The includer first includes <immintrin.h>, then defines
//   VALET_TILE_TARGET          the target features they compile for (simd_target.h)
//   VALET_TILE_NS              the namespace under valet:: to define them in
//   VALET_DOT_U8I8(acc, u, s)  acc + sums of 4 adjacent u8 * i8 products (int32 lanes)
//   VALET_DOT_I16(acc, a, b)   acc + sums of 2 adjacent i16 * i16 products (int32 lanes)
//   VALET_TILE_WIDE_U8         1 when VALET_DOT_U8I8 takes u up to 255 without saturating
//
// A tile keeps one accumulator per (weight row, token) pair and applies the
// per-block float operations of the AVX2 vec_dot in the same order, so each
// result equals that vec_dot's bit for bit; only the loads are shared. Both
// forms of the int8 product yield the same integers (maddubs cannot saturate:
// |x| <= 127 and one operand is at most 127 or a 4-bit/6-bit quant).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/kernel_table.h"
#include "kernels/prefetch.h"
#include "kernels/quant_blocks.h"
#include "kernels/simd_target.h"

VALET_TARGET_BEGIN(VALET_TILE_TARGET)
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

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i Load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// Decode streams several weight rows per thread from memory; a software
// prefetch ~1 KiB ahead of each row is cheap insurance for the hardware
// prefetcher, which tracks a limited number of streams.
constexpr int kPrefetchBytes = 1024;

inline void Prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }


// The 32 quants of a 4-bit block (Q4_0, Q4_1, IQ4_NL) in element order:
// low 128 bits the low nibbles (elements 0..15), high 128 bits the high ones.
inline __m256i Nibbles(const uint8_t* qs) {
  const __m128i raw = Load128(qs);
  const __m256i both =
      _mm256_inserti128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// The fifth bits of a Q5_0/Q5_1 block as 0x10 in byte k for bit k of qh.
inline __m256i FifthBits(const uint8_t* qh) {
  uint32_t h;
  std::memcpy(&h, qh, sizeof(h));
  // Byte k takes byte k / 8 of h, then keeps bit k % 8.
  const __m256i bytes =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(h)),
                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// 32-element weight blocks as int8 quants, or as unsigned bytes u = q + kOffset
// (the product then carries kOffset * sum(activations), subtracted up front).
// The unsigned form saves the sign shuffle per pair but needs a u8 operand of
// up to 255 for Q8_0 and IQ4_NL, which only the VNNI dot takes without
// saturating. Types with kHasMin add m * s per block (Q8_1 activations).
struct Q8_0Weights {
  using Block = BlockQ8_0;
  using Act = BlockQ8_0;
  static constexpr int kOffset = 128;
  static constexpr bool kUseUnsigned = VALET_TILE_WIDE_U8 != 0;
  static constexpr bool kHasMin = false;
  static __m256i Quants(const Block& b) { return Load256(b.qs); }
  static __m256i Unsigned(const Block& b) {
    return _mm256_xor_si256(Load256(b.qs), _mm256_set1_epi8(-128));
  }
};

struct Q4_0Weights {
  using Block = BlockQ4_0;
  using Act = BlockQ8_0;
  static constexpr int kOffset = 8;
  static constexpr bool kUseUnsigned = true;
  static constexpr bool kHasMin = false;
  static __m256i Unsigned(const Block& b) { return Nibbles(b.qs); }
  static __m256i Quants(const Block& b) {
    return _mm256_sub_epi8(Unsigned(b), _mm256_set1_epi8(8));
  }
};

struct Q5_0Weights {
  using Block = BlockQ5_0;
  using Act = BlockQ8_0;
  static constexpr int kOffset = 16;
  static constexpr bool kUseUnsigned = true;
  static constexpr bool kHasMin = false;
  static __m256i Unsigned(const Block& b) {
    return _mm256_or_si256(Nibbles(b.qs), FifthBits(b.qh));
  }
};

struct IQ4_NLWeights {
  using Block = BlockIQ4_NL;
  using Act = BlockQ8_0;
  static constexpr int kOffset = 128;
  static constexpr bool kUseUnsigned = VALET_TILE_WIDE_U8 != 0;
  static constexpr bool kHasMin = false;
  static __m256i Quants(const Block& b) {
    const __m256i table = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
    return _mm256_shuffle_epi8(table, Nibbles(b.qs));
  }
  static __m256i Unsigned(const Block& b) {
    return _mm256_xor_si256(Quants(b), _mm256_set1_epi8(-128));
  }
};

struct Q4_1Weights {
  using Block = BlockQ4_1;
  using Act = BlockQ8_1;
  static constexpr int kOffset = 0;
  static constexpr bool kUseUnsigned = true;
  static constexpr bool kHasMin = true;
  static __m256i Unsigned(const Block& b) { return Nibbles(b.qs); }
};

struct Q5_1Weights {
  using Block = BlockQ5_1;
  using Act = BlockQ8_1;
  static constexpr int kOffset = 0;
  static constexpr bool kUseUnsigned = true;
  static constexpr bool kHasMin = true;
  static __m256i Unsigned(const Block& b) {
    return _mm256_or_si256(Nibbles(b.qs), FifthBits(b.qh));
  }
};

// d[j][i] = scale of weight block i times scale of activation block j, each
// one f32 multiply as in vec_dot; kept in memory so that a pair's scale is a
// broadcast load rather than a shuffle.
template <int R, int C, class Block, class Act>
void PairScalesQ0(const Block* const* a, const Act* const* b, float (*d)[8]) {
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

// m[j][i] += (offset of weight block i) * (s of activation block j): the
// offset term of Q4_1/Q5_1, 8 rows per vector. Forced inline: called per
// block, GCC would otherwise call it out of line in the wide tiles.
template <int R, int C, class Block>
[[gnu::always_inline]] inline void AddOffsetTerms(const Block* const* a, const BlockQ8_1* const* b, __m256* m) {
  float mx[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) mx[i] = i < R ? _cvtsh_ss(a[i < R ? i : 0]->m) : 0.0f;
  const __m256 mxv = _mm256_setr_ps(mx[0], mx[1], mx[2], mx[3], mx[4], mx[5], mx[6], mx[7]);
#pragma GCC unroll 16
  for (int j = 0; j < C; ++j) m[j] = _mm256_fmadd_ps(mxv, _mm256_set1_ps(_cvtsh_ss(b[j]->s)), m[j]);
}

// 32-element weight blocks times their Q8_0/Q8_1 activations.
template <class W, int R, int C>
void GemmQ0(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out,
            int64_t ldo) {
  static_assert(R <= 8, "pair scales hold 8 rows");
  using Block = typename W::Block;
  using Act = typename W::Act;
  const auto* xb = static_cast<const uint8_t*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  __m256 acc[R][C];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  __m256 offsets[C];  // kHasMin only
#pragma GCC unroll 16
  for (int j = 0; j < C; ++j) offsets[j] = _mm256_setzero_ps();
  const int64_t nb = n / kQK8_0;
  for (int64_t l = 0; l < nb; ++l) {
    const Block* a[R];
    const Act* b[C];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      a[i] = reinterpret_cast<const Block*>(xb + i * ldx) + l;
      if constexpr (C == 1) Prefetch(reinterpret_cast<const uint8_t*>(a[i]) + kPrefetchBytes);
    }
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) b[j] = reinterpret_cast<const Act*>(yb + j * ldy) + l;
    alignas(32) float d[C][8];
    PairScalesQ0<R, C>(a, b, d);
    if constexpr (W::kHasMin) AddOffsetTerms<R, C>(a, b, offsets);
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
        __m256i base = _mm256_setzero_si256();
        if constexpr (W::kOffset != 0) {
          const __m256i off = VALET_DOT_U8I8(_mm256_setzero_si256(),
                                             _mm256_set1_epi8(static_cast<char>(W::kOffset)), yq);
          base = _mm256_sub_epi32(base, off);
        }
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
  alignas(32) float offset[C][8] = {};
  if constexpr (W::kHasMin) {
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) _mm256_store_ps(offset[j], offsets[j]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) {
      out[j * ldo + i] = W::kHasMin ? HsumPs(acc[i][j]) + offset[j][i] : HsumPs(acc[i][j]);
    }
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
    case GgmlType::kQ4_1:
      return {GemmQ0<Q4_1Weights, R, C>, R, C};
    case GgmlType::kQ5_0:
      return {GemmQ0<Q5_0Weights, R, C>, R, C};
    case GgmlType::kQ5_1:
      return {GemmQ0<Q5_1Weights, R, C>, R, C};
    case GgmlType::kIQ4_NL:
      return {GemmQ0<IQ4_NLWeights, R, C>, R, C};
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
}  // namespace valet::VALET_TILE_NS
VALET_TARGET_END()
