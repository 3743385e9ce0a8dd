// AVX2 row-group kernels: the 8 rows of a group in the 8 lanes of a vector,
// so a block's int8 products for 8 outputs end in one vector without a
// horizontal sum, and its float update is one multiply-add per token.
// Written once per shape over the block type, as packed_avx512.cpp: GemmRows
// for the 32-element types (Quants<Packed> unpacks them), GemmRowPairs for
// Q4_0 and Q8_0 prefill, GemmSuperRows for the super-block types
// (SuperQuants<Packed>). Per output the integers and the float operations are
// the reference's, in its order, so the results equal it bit for bit.
#include "kernels/packed_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <type_traits>

#include "kernels/packed_blocks.h"
#include "kernels/prefetch.h"
#include "kernels/simd_target.h"

VALET_TARGET_BEGIN("avx2,fma,f16c")

namespace valet::avx2 {
namespace {

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 4 activation quants repeated in every lane.
inline __m256i Broadcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

// Decode streams one row group per call and prefetches every cache line of
// the bytes 12 KiB ahead into L2 (kernels/prefetch.h), leaving the last step
// to L1 to the hardware. Into L1 at 4 KiB (as before) the loads still
// stalled: on Zen 4, 2 threads, Q4_K streamed at 16-19 GB/s and Q6_K at
// 11-13 against 28-29 and 23-25 this way (BM_DecodeStream, medians of 3 interleaved runs;
// 8-32 KiB ahead into L2 all within noise of each other). Prefetching one line
// per block, as at first, left the hardware prefetcher trailing and was
// slower than no prefetch at all.
template <size_t Bytes>
inline void PrefetchAhead(const void* block) {
  PrefetchBlockAhead<Bytes, 12 * 1024, PrefetchLevel::kL2>(block);
}

// The 32-element types' quants as maddubs takes them: q[i], lanes r, the 4
// quants of row r that meet activation dword i (elements 4i..4i+3). Unsigned
// quants (Q4_1, Q5_1, and Q4_0 and Q5_0 as q + 8 and q + 16) take maddubs
// directly, their products summed in int16 over kPerSum chunks (8 chunks of 4
// bits: 8 * 2 * 15 * 127 < 2^15; 4 of 5 bits: 4 * 2 * 31 * 127 < 2^15), and
// the offset kBias * sum(y) comes off in int32. Q8_0's and IQ4_NL's signed
// values (|v| <= 127) move their sign onto the activations so that maddubs
// sees |v|; each product pair (up to 2 * 127 * 127) goes to int32 alone.
template <class Packed>
struct Quants {
  static constexpr bool kOffset = requires(const Packed& p) { p.m; };  // Q4_1, Q5_1: + m * s per block
  static constexpr bool kFiveBits = requires(const Packed& p) { p.qh; };
  static constexpr bool kTable = std::is_same_v<Packed, BlockIQ4_NLx8>;
  static constexpr bool kEight = std::is_same_v<Packed, BlockQ8_0x8>;
  static constexpr bool kSigned = kTable || kEight;
  static constexpr int kBias = kOffset || kSigned ? 0 : kFiveBits ? 16 : 8;
  static constexpr int kPerSum = kFiveBits ? 4 : 8;
  using Act = std::conditional_t<kOffset, BlockQ8_1S, BlockQ8_0S>;

  static void Load(const Packed& b, __m256i* q) {
    if constexpr (kEight) {
#pragma GCC unroll 8
      for (int m = 0; m < 8; ++m) q[m] = Load256(b.qs + 32 * m);
    } else {
      const __m256i low4 = _mm256_set1_epi8(0x0f), bit4 = _mm256_set1_epi8(0x10);
      __m256i qh = _mm256_setzero_si256();
      if constexpr (kFiveBits) qh = Load256(b.qh);
#pragma GCC unroll 4
      for (int m = 0; m < 4; ++m) {
        const __m256i raw = Load256(b.qs + 32 * m);
        q[m] = _mm256_and_si256(raw, low4);
        q[4 + m] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
        if constexpr (kFiveBits) {
          // Bits m and 4 + m of the qh bytes to bit 4 (the int16 shifts move
          // bits across bytes only outside the 0x10 mask).
          q[m] = _mm256_or_si256(q[m], _mm256_and_si256(_mm256_slli_epi16(qh, 4 - m), bit4));
          q[4 + m] = _mm256_or_si256(q[4 + m], _mm256_and_si256(_mm256_srli_epi16(qh, m), bit4));
        }
      }
      if constexpr (kTable) {
        const __m256i values =
            _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) q[i] = _mm256_shuffle_epi8(values, q[i]);
      }
    }
  }
};

// The 32-element types, one row group by C tokens: per block
// acc = fma(dw dy, isum, acc), then for Q4_1 and Q5_1 acc = fma(m, s, acc),
// as the scalar reference.
template <class Packed, int C>
void GemmRows(int64_t n, const void* x, size_t, const void* y, size_t ldy, float* out, int64_t ldo) {
  using Q = Quants<Packed>;
  using Act = typename Q::Act;
  const auto* w = static_cast<const Packed*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[C];
#pragma GCC unroll 8
  for (int j = 0; j < C; ++j) acc[j] = _mm256_setzero_ps();
  const int64_t nb = n / kQK8_0;
  for (int64_t l = 0; l < nb; ++l) {
    const Packed& b = w[l];
    if constexpr (C == 1) PrefetchAhead<sizeof(b)>(&b);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.d)));
    __m256i q[8];
    Q::Load(b, q);
    __m256i u[8];
    if constexpr (Q::kSigned) {
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) u[i] = _mm256_abs_epi8(q[i]);
    }
#pragma GCC unroll 8
    for (int j = 0; j < C; ++j) {
      const Act& a = reinterpret_cast<const Act*>(yb + j * ldy)[l];
      __m256i isum;
      if constexpr (Q::kSigned) {
        __m256i t[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          const __m256i p = _mm256_maddubs_epi16(u[i], _mm256_sign_epi8(Broadcast4(a.qs + 4 * i), q[i]));
          t[i % 2] = _mm256_add_epi32(t[i % 2], _mm256_madd_epi16(p, ones));
        }
        isum = _mm256_add_epi32(t[0], t[1]);
      } else {
        isum = _mm256_setzero_si256();
#pragma GCC unroll 2
        for (int i0 = 0; i0 < 8; i0 += Q::kPerSum) {
          __m256i p = _mm256_maddubs_epi16(q[i0], Broadcast4(a.qs + 4 * i0));
#pragma GCC unroll 8
          for (int i = i0 + 1; i < i0 + Q::kPerSum; ++i)
            p = _mm256_add_epi16(p, _mm256_maddubs_epi16(q[i], Broadcast4(a.qs + 4 * i)));
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, ones));
        }
        if constexpr (Q::kBias != 0) isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(Q::kBias * a.sum));
      }
      const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(a.d));
      acc[j] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc[j]);
      if constexpr (Q::kOffset) {
        const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.m)));
        acc[j] = _mm256_fmadd_ps(mw, _mm256_set1_ps(a.s), acc[j]);
      }
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < C; ++j) _mm256_storeu_ps(out + j * ldo, acc[j]);
}

// Q4_0 and Q8_0 prefill, two row groups (x and x + ldx) by 4 tokens: each
// broadcast activation chunk feeds both groups, about a quarter fewer
// instructions per output block than one group at a time. Per output the
// same integers and the same float operations, block by block, as GemmRows
// and the reference. The sums (Q4_0's 8 in int16: they stay under 8 chunks;
// Q8_0's 8 exact int32), a few unpacked chunks and a broadcast fill the 16
// ymm registers, so the float accumulators are the outputs themselves (one
// store per output block; held in an array, GCC keeps some in registers and
// spills the sums instead).
template <class Packed>
  requires std::is_same_v<Packed, BlockQ4_0x8> || std::is_same_v<Packed, BlockQ8_0x8>
void GemmRowPairs(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out, int64_t ldo) {
  constexpr int C = 4;
  constexpr bool kEight = Quants<Packed>::kEight;
  const Packed* w[2] = {static_cast<const Packed*>(x),
                        reinterpret_cast<const Packed*>(static_cast<const uint8_t*>(x) + ldx)};
  const auto* yb = static_cast<const uint8_t*>(y);
  const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 4
  for (int j = 0; j < C; ++j) {
    _mm256_storeu_ps(out + j * ldo, _mm256_setzero_ps());
    _mm256_storeu_ps(out + j * ldo + kPackRows, _mm256_setzero_ps());
  }
  const int64_t nb = n / kQK8_0;
  for (int64_t l = 0; l < nb; ++l) {
    const BlockQ8_0S* a[C];
#pragma GCC unroll 4
    for (int j = 0; j < C; ++j) a[j] = reinterpret_cast<const BlockQ8_0S*>(yb + j * ldy) + l;
    __m256i s[2][C];  // Q4_0: int16 sums of u y; Q8_0: the int32 dots
    if constexpr (kEight) {
      // x's sign moves onto y so maddubs sees |x| (each int16 then holds one
      // pair's products, at most 2 * 127 * 127).
#pragma GCC unroll 8
      for (int m = 0; m < 8; ++m) {
        __m256i q[2], u[2];
#pragma GCC unroll 2
        for (int g = 0; g < 2; ++g) {
          q[g] = Load256(w[g][l].qs + 32 * m);
          u[g] = _mm256_abs_epi8(q[g]);
        }
#pragma GCC unroll 4
        for (int j = 0; j < C; ++j) {
          const __m256i ym = Broadcast4(a[j]->qs + 4 * m);
#pragma GCC unroll 2
          for (int g = 0; g < 2; ++g) {
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(u[g], _mm256_sign_epi8(ym, q[g])), ones);
            s[g][j] = m == 0 ? p : _mm256_add_epi32(s[g][j], p);
            // Without this GCC reassociates each sum over the chunks and
            // keeps all the products alive, spilling most of them.
            asm("" : "+x"(s[g][j]));
          }
        }
      }
    } else {
      const __m256i low4 = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
      for (int m = 0; m < 4; ++m) {
        __m256i lo[2], hi[2];
#pragma GCC unroll 2
        for (int g = 0; g < 2; ++g) {
          const __m256i raw = Load256(w[g][l].qs + 32 * m);
          lo[g] = _mm256_and_si256(raw, low4);
          hi[g] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
        }
#pragma GCC unroll 4
        for (int j = 0; j < C; ++j) {
          const __m256i ylo = Broadcast4(a[j]->qs + 4 * m), yhi = Broadcast4(a[j]->qs + 16 + 4 * m);
#pragma GCC unroll 2
          for (int g = 0; g < 2; ++g) {
            const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo[g], ylo), _mm256_maddubs_epi16(hi[g], yhi));
            s[g][j] = m == 0 ? p : _mm256_add_epi16(s[g][j], p);
            asm("" : "+x"(s[g][j]));  // as above
          }
        }
      }
    }
    __m256 dw[2];
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) dw[g] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[g][l].d)));
#pragma GCC unroll 4
    for (int j = 0; j < C; ++j) {
      // Q4_0: each token's offset 8 * sum(y) and scale broadcast once for
      // both groups (the shift in the vector: one load less than GCC's scalar form).
      [[maybe_unused]] __m256i offset = _mm256_setzero_si256();
      if constexpr (!kEight) offset = _mm256_slli_epi32(_mm256_set1_epi32(a[j]->sum), 3);
      const __m256 dy = _mm256_set1_ps(a[j]->d);
#pragma GCC unroll 2
      for (int g = 0; g < 2; ++g) {
        __m256i isum = s[g][j];
        if constexpr (!kEight) isum = _mm256_sub_epi32(_mm256_madd_epi16(s[g][j], ones), offset);
        float* o = out + j * ldo + g * kPackRows;
        _mm256_storeu_ps(o, _mm256_fmadd_ps(_mm256_mul_ps(dw[g], dy), _mm256_cvtepi32_ps(isum), _mm256_loadu_ps(o)));
      }
    }
  }
}

// Super-block types. Per sub-block s (32 elements) and token, the quants'
// products with maddubs, summed in int16 as far as they cannot overflow,
// times the rows' scales in the int16 -> int32 multiply-add; whatever makes
// the quants unsigned, and the mins, come off against the activation block
// sums. The integers are the reference's, and per super-block
// acc = fma(d dy, isum, acc) (and acc = fma(-(dmin dy), msum, acc) for the
// types with mins), as the reference.
//
// Per type: Load (sub-block s's quants, chunk m of every row in q[m]),
// SubBlockScales, Dot (one token's sub-block into isum, and into msum for
// Q2_K), and LoadMins and MinSum (the mins of Q4_K and Q5_K, once per
// super-block).
template <class Packed>
struct SuperQuants;

// The types whose mins come off in Dot, or that have none.
struct NoBlockMins {
  struct Mins {};
  template <class Packed>
  static Mins LoadMins(const Packed&) {
    return {};
  }
  static void MinSum(const Mins&, const BlockQ8_K&, __m256i&) {}
};

// Q4_K and Q5_K: the products of 4-bit quants summed in int16 over 8 chunks
// (as Q4_0); 5-bit quants (up to 31 * 127 * 2 per int16) only over 4 chunks
// at a time. Then scaled by the rows' 6-bit scales; the mins against the
// activation block sums, two sub-blocks per multiply-add.
template <class Packed>
  requires std::is_same_v<Packed, BlockQ4_Kx8> || std::is_same_v<Packed, BlockQ5_Kx8>
struct SuperQuants<Packed> {
  static constexpr bool kFiveBits = std::is_same_v<Packed, BlockQ5_Kx8>;

  static void Load(const Packed& b, int s, __m256i* q) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const uint8_t* qs = b.qs + 256 * (s / 2);
#pragma GCC unroll 8
    for (int m = 0; m < 8; ++m) {
      const __m256i raw = Load256(qs + 32 * m);
      q[m] = _mm256_and_si256(s % 2 == 0 ? raw : _mm256_srli_epi16(raw, 4), low4);
      if constexpr (kFiveBits) {
        // Bit s of each qh byte to bit 4 (the int16 shifts move bits across
        // bytes only outside the 0x10 mask).
        const __m256i hb = _mm256_slli_epi16(_mm256_srli_epi16(Load256(b.qh + 32 * m), s), 4);
        q[m] = _mm256_or_si256(q[m], _mm256_and_si256(hb, _mm256_set1_epi8(0x10)));
      }
    }
  }

  // Lane r: row r's scale in both int16 halves.
  struct Scales {
    __m256i sc;
  };
  static Scales SubBlockScales(const Packed& b, int s) {
    const __m256i sc32 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.sc + 8 * s)));
    return {_mm256_or_si256(sc32, _mm256_slli_epi32(sc32, 16))};
  }

  static void Dot(const __m256i* q, const Scales& sc, const int8_t* ys, const int16_t*, __m256i& isum, __m256i&) {
    constexpr int kChunksPerSum = kFiveBits ? 4 : 8;
#pragma GCC unroll 2
    for (int m0 = 0; m0 < 8; m0 += kChunksPerSum) {
      __m256i p = _mm256_maddubs_epi16(q[m0], Broadcast4(ys + 4 * m0));
#pragma GCC unroll 8
      for (int m = m0 + 1; m < m0 + kChunksPerSum; ++m)
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(q[m], Broadcast4(ys + 4 * m)));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, sc.sc));
    }
  }

  struct Mins {
    __m256i m[4];  // lane r: row r's mins of sub-blocks 2k, 2k + 1 as int16
  };
  static Mins LoadMins(const Packed& b) {
    Mins mins;
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
      mins.m[k] = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.mins + 16 * k)));
    return mins;
  }

  static void MinSum(const Mins& mins, const BlockQ8_K& a, __m256i& msum) {
    // The 8 sub-block sums of the activations, pairs (2k, 2k + 1) in 32-bit lane k.
    const __m128i bs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums)),
                                      _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums + 8)));
    __m256i m = _mm256_madd_epi16(mins.m[0], _mm256_broadcastd_epi32(bs));
    m = _mm256_add_epi32(m, _mm256_madd_epi16(mins.m[1], _mm256_broadcastd_epi32(_mm_shuffle_epi32(bs, 0x55))));
    m = _mm256_add_epi32(m, _mm256_madd_epi16(mins.m[2], _mm256_broadcastd_epi32(_mm_shuffle_epi32(bs, 0xaa))));
    msum = _mm256_add_epi32(m, _mm256_madd_epi16(mins.m[3], _mm256_broadcastd_epi32(_mm_shuffle_epi32(bs, 0xff))));
  }
};

// Lanes r: row r's int16 values of groups 2s (s0) and 2s + 1 (s1), each in
// both halves of its lane, from pair (one int16 per group and row).
inline void GroupScales(__m256i pair, __m256i* s0, __m256i* s1) {
  *s0 = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pair, 0xa0), 0xa0);
  *s1 = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pair, 0xf5), 0xf5);
}

// Adds to isum the dot of one token's sub-block with the quants, two chunks
// summed in int16 (2 * 2 * 63 * 127 < 2^15) per group scale.
inline __m256i GroupDots(const __m256i* q, __m256i s0, __m256i s1, const int8_t* ys, __m256i isum) {
#pragma GCC unroll 4
  for (int h = 0; h < 4; ++h) {
    const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(q[2 * h], Broadcast4(ys + 8 * h)),
                                       _mm256_maddubs_epi16(q[2 * h + 1], Broadcast4(ys + 8 * h + 4)));
    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, h < 2 ? s0 : s1));
  }
  return isum;
}

// Q6_K (u = q + 32, 6 bits) and Q3_K (u = q + 4, 3 bits): the unsigned quants'
// products per group scale; the offset times sc_g * bsum_g taken off per
// sub-block, so isum is the exact integer of the reference.
template <class Packed>
  requires std::is_same_v<Packed, BlockQ3_Kx8> || std::is_same_v<Packed, BlockQ6_Kx8>
struct SuperQuants<Packed> : NoBlockMins {
  // log2 of the offset that makes the quants unsigned: 32 for Q6_K, 4 for Q3_K.
  static constexpr int kOffsetShift = std::is_same_v<Packed, BlockQ6_Kx8> ? 5 : 2;

  static void Load(const BlockQ6_Kx8& b, int s, __m256i* q) {
    const __m256i low4 = _mm256_set1_epi8(0x0f), low2 = _mm256_set1_epi8(3);
    const uint8_t* ql = b.ql + 256 * (s / 2);
    const uint8_t* qh = b.qh + 256 * (s / 4);
#pragma GCC unroll 8
    for (int m = 0; m < 8; ++m) {
      const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(Load256(ql + 32 * m), 4 * (s % 2)), low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(Load256(qh + 32 * m), 2 * (s % 4)), low2);
      q[m] = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
    }
  }

  static void Load(const BlockQ3_Kx8& b, int s, __m256i* q) {
    const __m256i low2 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    const uint8_t* qs = b.qs + 256 * (s / 4);
#pragma GCC unroll 8
    for (int m = 0; m < 8; ++m) {
      const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(Load256(qs + 32 * m), 2 * (s % 4)), low2);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(Load256(b.hmask + 32 * m), s), one);
      q[m] = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 2));
    }
  }

  struct Scales {
    __m256i s0, s1, pair_offset;  // the signed group scales; both times the offset
  };
  static Scales SubBlockScales(const Packed& b, int s) {
    const __m256i pair = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.sc + 16 * s)));
    Scales sc;
    GroupScales(pair, &sc.s0, &sc.s1);
    sc.pair_offset = _mm256_slli_epi16(pair, kOffsetShift);
    return sc;
  }

  static void Dot(const __m256i* q, const Scales& sc, const int8_t* ys, const int16_t* bsums, __m256i& isum,
                  __m256i&) {
    const __m256i t = GroupDots(q, sc.s0, sc.s1, ys, isum);
    const __m256i bsum = Broadcast4(reinterpret_cast<const int8_t*>(bsums));
    isum = _mm256_sub_epi32(t, _mm256_madd_epi16(sc.pair_offset, bsum));
  }
};

// Q2_K: 2-bit quants, summed in int16 per group of 16 and scaled by the rows'
// 4-bit scales; the 4-bit mins against the activation group sums.
template <>
struct SuperQuants<BlockQ2_Kx8> : NoBlockMins {
  static void Load(const BlockQ2_Kx8& b, int s, __m256i* q) {
    const __m256i low2 = _mm256_set1_epi8(3);
    const uint8_t* qs = b.qs + 256 * (s / 4);
#pragma GCC unroll 8
    for (int m = 0; m < 8; ++m) q[m] = _mm256_and_si256(_mm256_srli_epi16(Load256(qs + 32 * m), 2 * (s % 4)), low2);
  }

  struct Scales {
    __m256i s0, s1, mins;
  };
  static Scales SubBlockScales(const BlockQ2_Kx8& b, int s) {
    // Lane r: row r's scales bytes of groups 2s, 2s + 1 as int16: scales, mins.
    const __m256i raw = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.sc + 16 * s)));
    Scales sc;
    GroupScales(_mm256_and_si256(raw, _mm256_set1_epi16(15)), &sc.s0, &sc.s1);
    sc.mins = _mm256_srli_epi16(raw, 4);
    return sc;
  }

  static void Dot(const __m256i* q, const Scales& sc, const int8_t* ys, const int16_t* bsums, __m256i& isum,
                  __m256i& msum) {
    isum = GroupDots(q, sc.s0, sc.s1, ys, isum);
    const __m256i bsum = Broadcast4(reinterpret_cast<const int8_t*>(bsums));
    msum = _mm256_add_epi32(msum, _mm256_madd_epi16(sc.mins, bsum));
  }
};

// IQ4_XS: each nibble through kIQ4NLValues (one shuffle), the signed values'
// sign moved onto the activations so maddubs sees |v| (up to 2 * 127 * 127
// per int16, so each product goes to int32 at once, times the row's scale).
template <>
struct SuperQuants<BlockIQ4_XSx8> : NoBlockMins {
  // q[0..3]: elements 4m..4m+3, q[4..7]: 16+4m..16+4m+3 of every row.
  static void Load(const BlockIQ4_XSx8& b, int s, __m256i* q) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i values =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {
      const __m256i raw = Load256(b.qs + 128 * s + 32 * m);
      q[m] = _mm256_shuffle_epi8(values, _mm256_and_si256(raw, low4));
      q[4 + m] = _mm256_shuffle_epi8(values, _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4));
    }
  }

  // Lane r: row r's scale in both int16 halves.
  struct Scales {
    __m256i sc;
  };
  static Scales SubBlockScales(const BlockIQ4_XSx8& b, int s) {
    const __m256i sc32 = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.sc + 8 * s)));
    return {_mm256_or_si256(_mm256_and_si256(sc32, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(sc32, 16))};
  }

  static void Dot(const __m256i* q, const Scales& sc, const int8_t* ys, const int16_t*, __m256i& isum, __m256i&) {
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      const int8_t* yi = ys + (i < 4 ? 4 * i : 16 + 4 * (i - 4));
      const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(q[i]), _mm256_sign_epi8(Broadcast4(yi), q[i]));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, sc.sc));
    }
  }
};

template <class Packed, int C>
void GemmSuperRows(int64_t n, const void* x, size_t, const void* y, size_t ldy, float* out, int64_t ldo) {
  using Q = SuperQuants<Packed>;
  constexpr bool kMins = requires(const Packed& p) { p.dmin; };  // Q2_K, Q4_K, Q5_K
  const auto* w = static_cast<const Packed*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  __m256 acc[C];
#pragma GCC unroll 8
  for (int j = 0; j < C; ++j) acc[j] = _mm256_setzero_ps();
  const int64_t nb = n / kQK_K;
  for (int64_t l = 0; l < nb; ++l) {
    const Packed& b = w[l];
    if constexpr (C == 1) PrefetchAhead<sizeof(b)>(&b);
    const BlockQ8_K* a[C];
    __m256i isum[C], msum[C];
#pragma GCC unroll 8
    for (int j = 0; j < C; ++j) {
      a[j] = reinterpret_cast<const BlockQ8_K*>(yb + j * ldy) + l;
      isum[j] = msum[j] = _mm256_setzero_si256();
    }
    for (int s = 0; s < 8; ++s) {
      __m256i q[8];
      Q::Load(b, s, q);
      const typename Q::Scales sc = Q::SubBlockScales(b, s);
#pragma GCC unroll 8
      for (int j = 0; j < C; ++j) Q::Dot(q, sc, a[j]->qs + 32 * s, a[j]->bsums + 2 * s, isum[j], msum[j]);
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.d)));
    [[maybe_unused]] __m256 dmw = _mm256_setzero_ps();
    if constexpr (kMins) dmw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.dmin)));
    const typename Q::Mins mins = Q::LoadMins(b);
#pragma GCC unroll 8
    for (int j = 0; j < C; ++j) {
      Q::MinSum(mins, *a[j], msum[j]);
      const __m256 dy = _mm256_set1_ps(a[j]->d);
      acc[j] = _mm256_fmadd_ps(_mm256_mul_ps(dw, dy), _mm256_cvtepi32_ps(isum[j]), acc[j]);
      if constexpr (kMins) acc[j] = _mm256_fnmadd_ps(_mm256_mul_ps(dmw, dy), _mm256_cvtepi32_ps(msum[j]), acc[j]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < C; ++j) _mm256_storeu_ps(out + j * ldo, acc[j]);
}

template <int C>
TileKernel Make(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
      // Prefill takes two row groups per call (Q8_0 too).
      return C == 1 ? TileKernel{GemmRows<BlockQ4_0x8, 1>, kPackRows, 1}
                    : TileKernel{GemmRowPairs<BlockQ4_0x8>, 2 * kPackRows, 4};
    case GgmlType::kQ8_0:
      return C == 1 ? TileKernel{GemmRows<BlockQ8_0x8, 1>, kPackRows, 1}
                    : TileKernel{GemmRowPairs<BlockQ8_0x8>, 2 * kPackRows, 4};
    case GgmlType::kQ4_1:
      return {GemmRows<BlockQ4_1x8, C>, kPackRows, C};
    case GgmlType::kQ5_0:
      return {GemmRows<BlockQ5_0x8, C>, kPackRows, C};
    case GgmlType::kQ5_1:
      return {GemmRows<BlockQ5_1x8, C>, kPackRows, C};
    case GgmlType::kIQ4_NL:
      return {GemmRows<BlockIQ4_NLx8, C>, kPackRows, C};
    case GgmlType::kQ4_K:
      return {GemmSuperRows<BlockQ4_Kx8, C>, kPackRows, C};
    case GgmlType::kQ5_K:
      return {GemmSuperRows<BlockQ5_Kx8, C>, kPackRows, C};
    case GgmlType::kQ2_K:
      return {GemmSuperRows<BlockQ2_Kx8, C>, kPackRows, C};
    case GgmlType::kIQ4_XS:
      return {GemmSuperRows<BlockIQ4_XSx8, C>, kPackRows, C};
    case GgmlType::kQ3_K:
      return {GemmSuperRows<BlockQ3_Kx8, C>, kPackRows, C};
    case GgmlType::kQ6_K:
      return {GemmSuperRows<BlockQ6_Kx8, C>, kPackRows, C};
    default:
      return {};
  }
}

}  // namespace

TileKernel PackedTile(GgmlType type, int cols) {
  return cols == 1 ? Make<1>(type) : cols == 4 ? Make<4>(type) : Make<8>(type);
}

TileKernel PackedTileOneGroup(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
      return {GemmRows<BlockQ4_0x8, 4>, kPackRows, 4};
    case GgmlType::kQ8_0:
      return {GemmRows<BlockQ8_0x8, 4>, kPackRows, 4};
    default:
      return {};
  }
}

}  // namespace valet::avx2

VALET_TARGET_END()

#else

namespace valet::avx2 {
TileKernel PackedTile(GgmlType, int) { return {}; }
TileKernel PackedTileOneGroup(GgmlType) { return {}; }
}  // namespace valet::avx2

#endif
