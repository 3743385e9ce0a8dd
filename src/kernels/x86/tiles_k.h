// Internal: the x86 tile kernels of the super-block types (Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K, IQ4_XS against Q8_K), the GemmTile / GemvTile entry points, and
// the vec_dots that are 1x1 tiles. Included after tiles.h, under the same
// macros (see there).
//
// Every type runs through one GemmK template: a weight struct W computes the
// integer sums of a super-block (and, for the types with mins, the min sums
// against the activation block sums); GemmK applies the float scales once per
// super-block in the scalar reference's order, so results are bit-exact with it.
#pragma once

#include "kernels/quant_blocks_k.h"
#include "kernels/x86/tiles.h"

VALET_TARGET_BEGIN(VALET_TILE_TARGET)
namespace valet::VALET_TILE_NS {
namespace tiles {

// The integer kernels below are big enough that GCC would call them out of
// line, passing the accumulators through memory; per super-block row that
// call costs as much as the work (2x on the decode tile).
#define VALET_TILE_INLINE [[gnu::always_inline]] inline

// Eight int32 vectors to one vector of their eight horizontal sums, in order.
inline __m256i Hsum8x8Epi32(const __m256i* v) {
  const __m256i t0 = _mm256_hadd_epi32(v[0], v[1]), t1 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i t2 = _mm256_hadd_epi32(v[4], v[5]), t3 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i u0 = _mm256_hadd_epi32(t0, t1), u1 = _mm256_hadd_epi32(t2, t3);
  return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20),
                          _mm256_permute2x128_si256(u0, u1, 0x31));
}

// The activation scales of eight Q8_K blocks as one vector.
inline __m256 Q8KScales(const BlockQ8_K* const* b) {
  return _mm256_setr_ps(b[0]->d, b[1]->d, b[2]->d, b[3]->d, b[4]->d, b[5]->d, b[6]->d, b[7]->d);
}

// 16 int16 lanes: the first 8 scaled by s0, the last 8 by s1 (two groups of 16 elements).
inline __m256i PairScales(int s0, int s1) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(static_cast<int16_t>(s0))),
                                 _mm_set1_epi16(static_cast<int16_t>(s1)), 1);
}

// acc[j] -= k * sum_g scale_g * bsums_g: folds a constant offset k of the
// quants out of the unsigned products (Q3_K, Q6_K).
template <int C>
VALET_TILE_INLINE void FoldOffset(__m256i scales16, int shift, const BlockQ8_K* const* b,
                                  __m256i* acc) {
  const __m256i sk = _mm256_slli_epi16(scales16, shift);
#pragma GCC unroll 16
  for (int j = 0; j < C; ++j)
    acc[j] = _mm256_sub_epi32(acc[j], _mm256_madd_epi16(sk, Load256(b[j]->bsums)));
}

template <int C>
VALET_TILE_INLINE void ZeroAll(__m256i* v) {
#pragma GCC unroll 16
  for (int j = 0; j < C; ++j) v[j] = _mm256_setzero_si256();
}

// Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins; Q5_K's fifth
// bits come from qh (bit 2c / 2c + 1 for the low / high half of chunk c).
template <int C, bool kFifthBit, class Block>
VALET_TILE_INLINE void Q45KIntegers(const Block& a, const BlockQ8_K* const* b, __m256i* acc,
                                    __m256i* msum) {
  alignas(16) uint8_t sc[8];
  alignas(32) int16_t mn[16];  // each sub-block's min, once per group of 16
  for (int k = 0; k < 8; ++k) {
    uint8_t m;
    UnpackQ4KScaleMin(a.scales, k, &sc[k], &m);
    mn[2 * k] = mn[2 * k + 1] = m;
  }
  const __m256i mins = _mm256_load_si256(reinterpret_cast<const __m256i*>(mn));
#pragma GCC unroll 16
  for (int j = 0; j < C; ++j) msum[j] = _mm256_madd_epi16(mins, Load256(b[j]->bsums));
  ZeroAll<C>(acc);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  __m256i hbits = _mm256_setzero_si256();
  if constexpr (kFifthBit) hbits = Load256(a.qh);
  const __m256i one = _mm256_set1_epi8(1);
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m256i q = Load256(a.qs + 32 * c);
    __m256i lo = _mm256_and_si256(q, low4);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
    if constexpr (kFifthBit) {
      lo = _mm256_or_si256(
          lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * c), one), 4));
      hi = _mm256_or_si256(
          hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * c + 1), one), 4));
    }
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

struct Q4KWeights {
  using Block = BlockQ4_K;
  static constexpr bool kHasMin = true;
  template <int C>
  VALET_TILE_INLINE static void Integers(const Block& a, const BlockQ8_K* const* b, __m256i* acc,
                                         __m256i* msum) {
    Q45KIntegers<C, false>(a, b, acc, msum);
  }
};

struct Q5KWeights {
  using Block = BlockQ5_K;
  static constexpr bool kHasMin = true;
  template <int C>
  VALET_TILE_INLINE static void Integers(const Block& a, const BlockQ8_K* const* b, __m256i* acc,
                                         __m256i* msum) {
    Q45KIntegers<C, true>(a, b, acc, msum);
  }
};

// The k-th 32 quants (unsigned, 0..63) of a 128-element half of a Q6_K block.
inline __m256i Q6KQuants(__m256i l0, __m256i l1, __m256i h, int k) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i lows = (k & 1) ? l1 : l0;
  const __m256i nib =
      k < 2 ? _mm256_and_si256(lows, low4) : _mm256_and_si256(_mm256_srli_epi16(lows, 4), low4);
  const __m256i top = _mm256_and_si256(_mm256_srli_epi16(h, 2 * k), _mm256_set1_epi8(0x03));
  return _mm256_or_si256(nib, _mm256_slli_epi16(top, 4));
}

// Q6_K: sum of scale * (q - 32) * q8, the -32 folded in through the block sums.
struct Q6KWeights {
  using Block = BlockQ6_K;
  static constexpr bool kHasMin = false;
  template <int C>
  VALET_TILE_INLINE static void Integers(const Block& a, const BlockQ8_K* const* b, __m256i* acc,
                                         __m256i*) {
    ZeroAll<C>(acc);
    FoldOffset<C>(_mm256_cvtepi8_epi16(Load128(a.scales)), 5, b, acc);
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
          acc[j] = VALET_DOT_I16(acc[j],
                                 _mm256_maddubs_epi16(q, Load256(b[j]->qs + 128 * h + 32 * k)), s);
        }
      }
    }
  }
};

// The 2-bit layouts (Q2_K, Q3_K): acc[j] += sum over groups of scale_g *
// (u . q8), u the 32 quants of (half hn, shift jj) given by `quants`.
template <int C, class Quants>
VALET_TILE_INLINE void TwoBitIntegers(const int16_t* scales, const BlockQ8_K* const* b,
                                      Quants quants, __m256i* acc) {
#pragma GCC unroll 2
  for (int hn = 0; hn < 2; ++hn) {
#pragma GCC unroll 4
    for (int jj = 0; jj < 4; ++jj) {
      const __m256i u = quants(hn, jj);
      const __m256i s = PairScales(scales[8 * hn + 2 * jj], scales[8 * hn + 2 * jj + 1]);
#pragma GCC unroll 16
      for (int j = 0; j < C; ++j) {
        acc[j] = VALET_DOT_I16(acc[j],
                               _mm256_maddubs_epi16(u, Load256(b[j]->qs + 128 * hn + 32 * jj)), s);
      }
    }
  }
}

inline __m256i TwoBits(__m256i q, int jj) {
  return _mm256_and_si256(_mm256_srli_epi16(q, 2 * jj), _mm256_set1_epi8(3));
}

struct Q2KWeights {
  using Block = BlockQ2_K;
  static constexpr bool kHasMin = true;
  template <int C>
  VALET_TILE_INLINE static void Integers(const Block& a, const BlockQ8_K* const* b, __m256i* acc,
                                         __m256i* msum) {
    const __m256i packed = _mm256_cvtepu8_epi16(Load128(a.scales));
    const __m256i mins = _mm256_srli_epi16(packed, 4);
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) msum[j] = _mm256_madd_epi16(mins, Load256(b[j]->bsums));
    alignas(32) int16_t scales[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(scales),
                       _mm256_and_si256(packed, _mm256_set1_epi16(0x0f)));
    const __m256i q[2] = {Load256(a.qs), Load256(a.qs + 32)};
    ZeroAll<C>(acc);
    TwoBitIntegers<C>(
        scales, b, [&q](int hn, int jj) { return TwoBits(q[hn], jj); }, acc);
  }
};

// Q3_K: u = q2 + 4 * hbit in 0..7, the value u - 4; the -4 folded in through
// the block sums.
struct Q3KWeights {
  using Block = BlockQ3_K;
  static constexpr bool kHasMin = false;
  template <int C>
  VALET_TILE_INLINE static void Integers(const Block& a, const BlockQ8_K* const* b, __m256i* acc,
                                         __m256i*) {
    alignas(32) int16_t scales[16];
    for (int g = 0; g < 16; ++g) scales[g] = static_cast<int16_t>(UnpackQ3KScale(a.scales, g) - 32);
    ZeroAll<C>(acc);
    FoldOffset<C>(_mm256_load_si256(reinterpret_cast<const __m256i*>(scales)), 2, b, acc);
    const __m256i q[2] = {Load256(a.qs), Load256(a.qs + 32)};
    const __m256i hm = Load256(a.hmask);
    const auto quants = [&q, hm](int hn, int jj) {
      const __m256i high =
          _mm256_and_si256(_mm256_srli_epi16(hm, 4 * hn + jj), _mm256_set1_epi8(1));
      return _mm256_or_si256(TwoBits(q[hn], jj), _mm256_slli_epi16(high, 2));
    };
    TwoBitIntegers<C>(scales, b, quants, acc);
  }
};

// IQ4_XS: signed levels from the table; x's sign moves onto y so maddubs sees |x|.
struct IQ4XSWeights {
  using Block = BlockIQ4_XS;
  static constexpr bool kHasMin = false;
  template <int C>
  VALET_TILE_INLINE static void Integers(const Block& a, const BlockQ8_K* const* b, __m256i* acc,
                                         __m256i*) {
    const __m256i table = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
    ZeroAll<C>(acc);
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ++ib) {
      const __m256i v = _mm256_shuffle_epi8(table, Nibbles(a.qs + 16 * ib));
      const __m256i u = _mm256_abs_epi8(v);
      const __m256i s = _mm256_set1_epi16(static_cast<int16_t>(UnpackIQ4XSScale(a, ib) - 32));
#pragma GCC unroll 16
      for (int j = 0; j < C; ++j) {
        const __m256i p = _mm256_maddubs_epi16(u, _mm256_sign_epi8(Load256(b[j]->qs + 32 * ib), v));
        acc[j] = VALET_DOT_I16(acc[j], p, s);
      }
    }
  }
};

template <class W, int R, int C>
void GemmK(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out,
           int64_t ldo) {
  using Block = typename W::Block;
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
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) b[j] = reinterpret_cast<const BlockQ8_K*>(yb + j * ldy) + l;
    for (int i = 0; i < R; ++i) {
      const Block& a = reinterpret_cast<const Block*>(xb + i * ldx)[l];
      if constexpr (C == 1) PrefetchBlockAhead<sizeof(Block), kPrefetchBytes>(&a);  // a super-block spans several lines
      __m256i acc[C], msum[C];
      W::template Integers<C>(a, b, acc, msum);
      const float da = Fp16ToFp32(a.d);
      if constexpr (kLanes) {
        const __m256 bd = Q8KScales(b);
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(da), bd);
        const __m256 isum = _mm256_cvtepi32_ps(Hsum8x8Epi32(acc));
        if constexpr (W::kHasMin) {
          const __m256 dmin = _mm256_mul_ps(_mm256_set1_ps(Fp16ToFp32(a.dmin)), bd);
          const __m256 ms = _mm256_cvtepi32_ps(Hsum8x8Epi32(msum));
          vsum[i] = _mm256_add_ps(vsum[i],
                                  _mm256_sub_ps(_mm256_mul_ps(d, isum), _mm256_mul_ps(dmin, ms)));
        } else {
          vsum[i] = _mm256_add_ps(vsum[i], _mm256_mul_ps(d, isum));
        }
      } else {
#pragma GCC unroll 16
        for (int j = 0; j < C; ++j) {
          const float d = da * b[j]->d;
          const auto isum = static_cast<float>(HsumEpi32(acc[j]));
          if constexpr (W::kHasMin) {
            const float dmin = Fp16ToFp32(a.dmin) * b[j]->d;
            sum[i][j] += d * isum - dmin * static_cast<float>(HsumEpi32(msum[j]));
          } else {
            sum[i][j] += d * isum;
          }
        }
      }
    }
  }
  for (int i = 0; i < R; ++i) {
    if constexpr (kLanes) _mm256_storeu_ps(sum[i], vsum[i]);
    for (int j = 0; j < C; ++j) out[j * ldo + i] = sum[i][j];
  }
}

template <int R, int C>
TileKernel MakeK(GgmlType type) {
  switch (type) {
    case GgmlType::kQ2_K:
      return {GemmK<Q2KWeights, R, C>, R, C};
    case GgmlType::kQ3_K:
      return {GemmK<Q3KWeights, R, C>, R, C};
    case GgmlType::kQ4_K:
      return {GemmK<Q4KWeights, R, C>, R, C};
    case GgmlType::kQ5_K:
      return {GemmK<Q5KWeights, R, C>, R, C};
    case GgmlType::kQ6_K:
      return {GemmK<Q6KWeights, R, C>, R, C};
    case GgmlType::kIQ4_XS:
      return {GemmK<IQ4XSWeights, R, C>, R, C};
    default:
      return {};
  }
}

inline bool IsSuperBlockType(GgmlType type) { return MakeK<1, 1>(type).fn != nullptr; }

#undef VALET_TILE_INLINE

}  // namespace tiles

// Shapes chosen to fit 16 ymm registers: R x C float accumulators plus the
// operands of one step for the 32-element and float types; the super-block
// types keep C integer accumulators per weight row and reuse each unpacked
// row C times.
TileKernel GemmTile(GgmlType type) {
  if (tiles::IsSuperBlockType(type)) return tiles::MakeK<1, 8>(type);
  return tiles::Make<4, 3>(type);
}

TileKernel GemvTile(GgmlType type) {
  if (tiles::IsSuperBlockType(type)) return tiles::MakeK<2, 1>(type);
  return tiles::Make<4, 1>(type);
}

// The weight types whose vec_dot in this table is the 1x1 tile.
float DotF32(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmFloat<tiles::F32Elems, 1, 1>>(n, x, y);
}
float DotF16(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmFloat<tiles::F16Elems, 1, 1>>(n, x, y);
}
float DotBf16(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmFloat<tiles::Bf16Elems, 1, 1>>(n, x, y);
}
float DotQ4_1(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmQ0<tiles::Q4_1Weights, 1, 1>>(n, x, y);
}
float DotQ5_0(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmQ0<tiles::Q5_0Weights, 1, 1>>(n, x, y);
}
float DotQ5_1(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmQ0<tiles::Q5_1Weights, 1, 1>>(n, x, y);
}
float DotIQ4_NL(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmQ0<tiles::IQ4_NLWeights, 1, 1>>(n, x, y);
}
float DotQ2_K(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmK<tiles::Q2KWeights, 1, 1>>(n, x, y);
}
float DotQ3_K(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmK<tiles::Q3KWeights, 1, 1>>(n, x, y);
}
float DotQ4_K(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmK<tiles::Q4KWeights, 1, 1>>(n, x, y);
}
float DotQ5_K(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmK<tiles::Q5KWeights, 1, 1>>(n, x, y);
}
float DotQ6_K(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmK<tiles::Q6KWeights, 1, 1>>(n, x, y);
}
float DotIQ4_XS(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmK<tiles::IQ4XSWeights, 1, 1>>(n, x, y);
}

}  // namespace valet::VALET_TILE_NS
VALET_TARGET_END()
