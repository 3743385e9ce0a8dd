// AVX-512 VNNI row-group GEMMs: two row groups per 512-bit vector. Group
// g's 8 rows sit in lanes 0-7, group g + 1's in lanes 8-15, so one vpdpbusd
// with a token's 4 activation bytes broadcast from memory does 16 rows x 4
// quants, and each weight chunk, unpacked once, serves 8 tokens. A range's
// odd last group runs the same kernel with both halves reading it, storing
// half. Per output the integers and the float operations are the
// reference's, in its order, so the results equal the scalar table's bit for
// bit. Decode (one token) keeps the AVX2 kernels: it waits on memory, not on
// arithmetic.
#include "kernels/packed_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <array>
#include <type_traits>

#include "kernels/packed_blocks.h"
#include "kernels/prefetch.h"
#include "kernels/simd_target.h"

VALET_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#if !defined(__clang__)
// GCC 12's _mm512_undefined_* initialise a vector with itself, which
// -W(maybe-)uninitialized flag in many 512-bit intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace valet::avx512vnni {
namespace {

constexpr int kTokens = 8;  // per call

// The IQ4_NL levels plus 128, as the unsigned bytes 1..241 vpdpbusd takes.
constexpr std::array<uint8_t, 16> kIQ4NLBiased = [] {
  std::array<uint8_t, 16> biased{};
  for (int i = 0; i < 16; ++i) biased[i] = static_cast<uint8_t>(kIQ4NLValues[i] + 128);
  return biased;
}();

inline __m512i Broadcast128(const void* p) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}

// 32 bytes of group 0 in the low half, of group 1 in the high half.
inline __m512i LoadPair(const void* lo, const void* hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(lo))),
                            _mm256_loadu_si256(static_cast<const __m256i*>(hi)), 1);
}
inline __m256i LoadPair128(const void* lo, const void* hi) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(lo))),
                                 _mm_loadu_si128(static_cast<const __m128i*>(hi)), 1);
}
// The 8 bytes at lo, then the 8 at hi.
inline __m128i LoadPair64(const void* lo, const void* hi) {
  return _mm_unpacklo_epi64(_mm_loadl_epi64(static_cast<const __m128i*>(lo)),
                            _mm_loadl_epi64(static_cast<const __m128i*>(hi)));
}

// acc + the dot of u's unsigned bytes with the 4 signed activation bytes at p
// (or of u's int16 pairs with two int16 block sums) in every lane, the bytes
// read as the instruction's {1to16} broadcast operand: GCC 12 broadcasts them
// into a register first (clang folds them), one more µop per product, and
// these loops issue one product per 64 multiply-adds.
using UnalignedI32 = int32_t __attribute__((may_alias, aligned(1)));
inline __m512i DpbusdBroadcast(__m512i acc, __m512i u, const void* p) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*static_cast<const UnalignedI32*>(p)));
  return acc;
}
inline __m512i DpwssdBroadcast(__m512i acc, __m512i w, const void* p) {
  asm("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*static_cast<const UnalignedI32*>(p)));
  return acc;
}

// Both groups' 8 fp16 scales (or offsets).
inline __m512 RowScales(const uint16_t* h0, const uint16_t* h1) { return _mm512_cvtph_ps(LoadPair128(h0, h1)); }

// Block l of the two groups a call covers; with G == 1 both are the one group.
template <class Packed, int G>
struct Groups {
  const Packed* w0;
  const Packed* w1;
  Groups(const void* x, size_t ldx)
      : w0(static_cast<const Packed*>(x)),
        w1(G == 2 ? reinterpret_cast<const Packed*>(static_cast<const uint8_t*>(x) + ldx) : w0) {}
};

// A token's 16 outputs: both groups', or with G == 1 the first 8 only.
template <int G>
inline __m512 LoadOut(const float* o) {
  if constexpr (G == 2) return _mm512_loadu_ps(o);
  return _mm512_zextps256_ps512(_mm256_loadu_ps(o));
}
template <int G>
inline void StoreOut(float* o, __m512 v) {
  if constexpr (G == 2) {
    _mm512_storeu_ps(o, v);
  } else {
    _mm256_storeu_ps(o, _mm512_castps512_ps256(v));
  }
}

// The unsigned form vpdpbusd takes of each type's quants: u = q + bias, so
// the dot is sum(u y) - bias * sum(y). u[i], lanes r and 8 + r: the 4 quants
// of each group's row r that meet activation dword i (elements 4i..4i+3).
template <class Packed>
struct Unsigned {
  static constexpr bool kOffset = requires(const Packed& p) { p.m; };  // Q4_1, Q5_1: q >= 0
  static constexpr bool kFiveBits = requires(const Packed& p) { p.qh; };
  static constexpr bool kTable = std::is_same_v<Packed, BlockIQ4_NLx8>;
  static constexpr bool kEight = std::is_same_v<Packed, BlockQ8_0x8>;
  static constexpr int kBias = kOffset ? 0 : kEight || kTable ? 128 : kFiveBits ? 16 : 8;

  static void Load(const Packed& b0, const Packed& b1, __m512i* u) {
    if constexpr (kEight) {
      const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) u[i] = _mm512_xor_si512(LoadPair(b0.qs + 32 * i, b1.qs + 32 * i), flip);
    } else {
      const __m512i low4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
      __m512i qh = _mm512_setzero_si512();
      if constexpr (kFiveBits) qh = LoadPair(b0.qh, b1.qh);
#pragma GCC unroll 4
      for (int m = 0; m < 4; ++m) {
        const __m512i raw = LoadPair(b0.qs + 32 * m, b1.qs + 32 * m);
        u[m] = _mm512_and_si512(raw, low4);
        u[4 + m] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
        if constexpr (kFiveBits) {  // packed_blocks.h: bits m and 4 + m of qh
          u[m] = _mm512_or_si512(u[m], _mm512_and_si512(_mm512_slli_epi16(qh, 4 - m), bit4));
          u[4 + m] = _mm512_or_si512(u[4 + m], _mm512_and_si512(_mm512_srli_epi16(qh, m), bit4));
        }
      }
      if constexpr (kTable) {
        const __m512i values = Broadcast128(kIQ4NLBiased.data());
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) u[i] = _mm512_shuffle_epi8(values, u[i]);
      }
    }
  }
};

// The 32-element types: per block and token, 8 vpdpbusd from -bias * sum(y),
// then acc = fma(dw dy, isum, acc) (and fma(m, s, acc) for Q4_1 and Q5_1).
template <class Packed, int G>
void GemmRows(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out, int64_t ldo) {
  using U = Unsigned<Packed>;
  using Act = std::conditional_t<U::kOffset, BlockQ8_1S, BlockQ8_0S>;
  const Groups<Packed, G> w(x, ldx);
  const auto* yb = static_cast<const uint8_t*>(y);
  __m512 acc[kTokens];
#pragma GCC unroll 8
  for (int j = 0; j < kTokens; ++j) acc[j] = _mm512_setzero_ps();
  const int64_t nb = n / kQK8_0;
  for (int64_t l = 0; l < nb; ++l) {
    const Packed& b0 = w.w0[l];
    const Packed& b1 = w.w1[l];
    const __m512 dw = RowScales(b0.d, b1.d);
    __m512 mw = _mm512_setzero_ps();
    if constexpr (U::kOffset) mw = RowScales(b0.m, b1.m);
    __m512i u[8];
    U::Load(b0, b1, u);
    // The tokens' sums advance together, chunk by chunk: 8 independent
    // vpdpbusd chains in flight instead of one token's 8 dependent ones.
    const Act* a[kTokens];
    __m512i isum[kTokens];
#pragma GCC unroll 8
    for (int j = 0; j < kTokens; ++j) {
      a[j] = reinterpret_cast<const Act*>(yb + j * ldy) + l;
      // 8 activation rows, 1280 bytes apart at n_in = 1024, are more streams
      // than the L1 prefetcher follows: ask for each 8 blocks ahead.
      __builtin_prefetch(a[j] + 8, 0, static_cast<int>(PrefetchLevel::kL1));
      isum[j] = _mm512_setzero_si512();
      if constexpr (U::kBias != 0) isum[j] = _mm512_set1_epi32(-U::kBias * a[j]->sum);
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
#pragma GCC unroll 8
      for (int j = 0; j < kTokens; ++j) isum[j] = DpbusdBroadcast(isum[j], u[i], a[j]->qs + 4 * i);
    }
#pragma GCC unroll 8
    for (int j = 0; j < kTokens; ++j) {
      acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(a[j]->d)), _mm512_cvtepi32_ps(isum[j]), acc[j]);
      if constexpr (U::kOffset) acc[j] = _mm512_fmadd_ps(mw, _mm512_set1_ps(a[j]->s), acc[j]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < kTokens; ++j) StoreOut<G>(out + j * ldo, acc[j]);
}

// Super-block types. Per sub-block s (32 elements) and token, the unsigned
// quants' dots with vpdpbusd, exact in int32, then times the rows' scales
// (one per sub-block, or one per 16 elements: the dot of chunks 0-3 and of
// 4-7); the unsigned offset and the mins come off against the activations'
// block sums (bsums, one per 16 elements) with vpdpwssd. The integers equal
// the reference's and the float steps are its own, in its order.
//
// Lanes r and 8 + r: row r's scale of sub-block s, as int32, from 8 bytes per group.
template <bool kSigned>
inline __m512i RowBytes(const void* p0, const void* p1) {
  const __m128i v = LoadPair64(p0, p1);
  return kSigned ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
}

// Lanes r and 8 + r: row r's bytes 2r, 2r + 1 of 16 (its groups 2s, 2s + 1) as an int16 pair.
template <bool kSigned>
inline __m512i GroupPairs(const void* p0, const void* p1) {
  const __m256i v = LoadPair128(p0, p1);
  return kSigned ? _mm512_cvtepi8_epi16(v) : _mm512_cvtepu8_epi16(v);
}

// An int32 value (|v| < 2^15) in both int16 halves of its lane.
inline __m512i Twice16(__m512i v) {
  return _mm512_or_si512(_mm512_and_si512(v, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(v, 16));
}

// Four bit planes of 2-bit quants (Q2_K, Q3_K's low bits, Q6_K's high bits):
// sub-block s's bits of chunk m.
inline __m512i TwoBits(const uint8_t* plane0, const uint8_t* plane1, int s, int m) {
  const size_t at = 256 * (s / 4) + 32 * m;
  return _mm512_and_si512(_mm512_srli_epi16(LoadPair(plane0 + at, plane1 + at), 2 * (s % 4)), _mm512_set1_epi8(3));
}

enum class Mins { kNone, kPerSubBlock, kPerGroup };

// Per type: Load (sub-block s's unsigned quants), Scales (kTwoScales: the
// int16 pair of the groups' scales; else the sub-block's scale as int32),
// kOffsetShift (log2 of the bias, -1 when the quants are unsigned already)
// and kUnrollSubBlocks (whether GemmSuperRows unrolls its sub-block loop).
template <class Packed>
struct SuperQuants;

// Q4_K and Q5_K: one 6-bit scale per sub-block and one min.
template <class Packed>
  requires std::is_same_v<Packed, BlockQ4_Kx8> || std::is_same_v<Packed, BlockQ5_Kx8>
struct SuperQuants<Packed> {
  static constexpr bool kTwoScales = false;
  static constexpr int kOffsetShift = -1;
  static constexpr Mins kMins = Mins::kPerSubBlock;
  static constexpr bool kUnrollSubBlocks = std::is_same_v<Packed, BlockQ5_Kx8>;
  static void Load(const Packed& b0, const Packed& b1, int s, __m512i* u) {
    const size_t at = 256 * (s / 2);
#pragma GCC unroll 8
    for (int m = 0; m < 8; ++m) {
      const __m512i raw = LoadPair(b0.qs + at + 32 * m, b1.qs + at + 32 * m);
      u[m] = _mm512_and_si512(s % 2 == 0 ? raw : _mm512_srli_epi16(raw, 4), _mm512_set1_epi8(0x0f));
      if constexpr (std::is_same_v<Packed, BlockQ5_Kx8>) {
        const __m512i hb = _mm512_slli_epi16(_mm512_srli_epi16(LoadPair(b0.qh + 32 * m, b1.qh + 32 * m), s), 4);
        u[m] = _mm512_or_si512(u[m], _mm512_and_si512(hb, _mm512_set1_epi8(0x10)));
      }
    }
  }
  static __m512i Scales(const Packed& b0, const Packed& b1, int s) {
    return RowBytes<false>(b0.sc + 8 * s, b1.sc + 8 * s);
  }
  // Lanes r and 8 + r: row r's mins of sub-blocks 2k and 2k + 1 as an int16
  // pair, so one vpdpwssd with the two sub-blocks' sums adds both products.
  static __m512i SubBlockMinPairs(const Packed& b0, const Packed& b1, int k) {
    return GroupPairs<false>(b0.mins + 16 * k, b1.mins + 16 * k);
  }
};

// Q6_K (u = q + 32) and Q3_K (u = q + 4): a signed scale per 16 elements.
template <class Packed>
  requires std::is_same_v<Packed, BlockQ6_Kx8> || std::is_same_v<Packed, BlockQ3_Kx8>
struct SuperQuants<Packed> {
  static constexpr bool kTwoScales = true;
  static constexpr int kOffsetShift = std::is_same_v<Packed, BlockQ6_Kx8> ? 5 : 2;
  static constexpr Mins kMins = Mins::kNone;
  static constexpr bool kUnrollSubBlocks = true;
  static void Load(const Packed& b0, const Packed& b1, int s, __m512i* u) {
#pragma GCC unroll 8
    for (int m = 0; m < 8; ++m) {
      if constexpr (std::is_same_v<Packed, BlockQ6_Kx8>) {
        const size_t at = 256 * (s / 2) + 32 * m;
        const __m512i lo =
            _mm512_and_si512(_mm512_srli_epi16(LoadPair(b0.ql + at, b1.ql + at), 4 * (s % 2)), _mm512_set1_epi8(0x0f));
        // The high bits' plane shifted so that sub-block s's pair sits at bits 4-5,
        // then lo | (that & 0x30) in one ternary-logic step.
        const size_t hat = 256 * (s / 4) + 32 * m;
        const __m512i planes = LoadPair(b0.qh + hat, b1.qh + hat);
        const int k = 2 * (s % 4);
        const __m512i hb = k < 4 ? _mm512_slli_epi16(planes, 4 - k) : _mm512_srli_epi16(planes, k - 4);
        u[m] = _mm512_ternarylogic_epi32(lo, hb, _mm512_set1_epi8(0x30), 0xf8);  // a | (b & c)
      } else {
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(LoadPair(b0.hmask + 32 * m, b1.hmask + 32 * m), s),
                                            _mm512_set1_epi8(1));
        u[m] = _mm512_or_si512(TwoBits(b0.qs, b1.qs, s, m), _mm512_slli_epi16(hi, 2));
      }
    }
  }
  static __m512i Scales(const Packed& b0, const Packed& b1, int s) {
    return GroupPairs<true>(b0.sc + 16 * s, b1.sc + 16 * s);
  }
};

// Q2_K: 2-bit quants, a 4-bit scale and min per 16 elements.
template <>
struct SuperQuants<BlockQ2_Kx8> {
  static constexpr bool kTwoScales = true;
  static constexpr int kOffsetShift = -1;
  static constexpr Mins kMins = Mins::kPerGroup;
  static constexpr bool kUnrollSubBlocks = true;
  static void Load(const BlockQ2_Kx8& b0, const BlockQ2_Kx8& b1, int s, __m512i* u) {
#pragma GCC unroll 8
    for (int m = 0; m < 8; ++m) u[m] = TwoBits(b0.qs, b1.qs, s, m);
  }
  static __m512i Scales(const BlockQ2_Kx8& b0, const BlockQ2_Kx8& b1, int s) {
    return _mm512_and_si512(GroupPairs<false>(b0.sc + 16 * s, b1.sc + 16 * s), _mm512_set1_epi16(0x0f));
  }
  // Lanes r, 8 + r: row r's mins of groups 2s, 2s + 1 as an int16 pair.
  static __m512i GroupMins(const BlockQ2_Kx8& b0, const BlockQ2_Kx8& b1, int s) {
    return _mm512_srli_epi16(GroupPairs<false>(b0.sc + 16 * s, b1.sc + 16 * s), 4);
  }
};

// IQ4_XS: nibbles through the biased levels (u = v + 128), a signed scale per sub-block.
template <>
struct SuperQuants<BlockIQ4_XSx8> {
  static constexpr bool kTwoScales = false;
  static constexpr int kOffsetShift = 7;
  static constexpr Mins kMins = Mins::kNone;
  static constexpr bool kUnrollSubBlocks = false;
  static void Load(const BlockIQ4_XSx8& b0, const BlockIQ4_XSx8& b1, int s, __m512i* u) {
    const __m512i low4 = _mm512_set1_epi8(0x0f), values = Broadcast128(kIQ4NLBiased.data());
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {
      const size_t at = 128 * s + 32 * m;
      const __m512i raw = LoadPair(b0.qs + at, b1.qs + at);
      u[m] = _mm512_shuffle_epi8(values, _mm512_and_si512(raw, low4));
      u[4 + m] = _mm512_shuffle_epi8(values, _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4));
    }
  }
  static __m512i Scales(const BlockIQ4_XSx8& b0, const BlockIQ4_XSx8& b1, int s) {
    return RowBytes<true>(b0.sc + 8 * s, b1.sc + 8 * s);
  }
};

// The outputs are the float accumulators (loaded and stored once per token
// and super-block), which leaves the registers to the quants and the integer sums.
template <class Packed, int G>
void GemmSuperRows(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out, int64_t ldo) {
  using Q = SuperQuants<Packed>;
  // One scale per sub-block: a token's 8 products can be one chain (the 8
  // tokens' chains keep the multipliers busy), saving a zero and an add per
  // token. Measured faster only with the sub-block loop unrolled (Q5_K: +5%
  // in BM_MatMulLayout/13/64/1; Q4_K and IQ4_XS 3-4% slower in the loop).
  constexpr bool kOneChain = !Q::kTwoScales && Q::kUnrollSubBlocks;
  const Groups<Packed, G> w(x, ldx);
  const auto* yb = static_cast<const uint8_t*>(y);
#pragma GCC unroll 8
  for (int j = 0; j < kTokens; ++j) StoreOut<G>(out + j * ldo, _mm512_setzero_ps());
  const int64_t nb = n / kQK_K;
  for (int64_t l = 0; l < nb; ++l) {
    const Packed& b0 = w.w0[l];
    const Packed& b1 = w.w1[l];
    const BlockQ8_K* a[kTokens];
#pragma GCC unroll 8
    for (int j = 0; j < kTokens; ++j) a[j] = reinterpret_cast<const BlockQ8_K*>(yb + j * ldy) + l;
    __m512i isum[kTokens], msum[kTokens];
#pragma GCC unroll 8
    for (int j = 0; j < kTokens; ++j) isum[j] = msum[j] = _mm512_setzero_si512();
    const auto sub_block = [&](int s) __attribute__((always_inline)) {
      __m512i u[8];
      Q::Load(b0, b1, s, u);
      const __m512i sc = Q::Scales(b0, b1, s);
      // Two scales: the low int16 of the pair for chunks 0-3, the high for 4-7.
      const __m512i sc0 = Q::kTwoScales ? _mm512_srai_epi32(_mm512_slli_epi32(sc, 16), 16) : sc;
      const __m512i sc1 = Q::kTwoScales ? _mm512_srai_epi32(sc, 16) : sc;
      // -(bias * scale) for each of the groups 2s, 2s + 1, against their bsums.
      __m512i offset = _mm512_setzero_si512();
      if constexpr (Q::kOffsetShift >= 0) {
        const __m512i pair = Q::kTwoScales ? sc : Twice16(sc);
        offset = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(pair, Q::kOffsetShift));
      }
      __m512i group_mins = _mm512_setzero_si512();
      if constexpr (Q::kMins == Mins::kPerGroup) group_mins = Q::GroupMins(b0, b1, s);
#pragma GCC unroll 8
      for (int j = 0; j < kTokens; ++j) {
        const int8_t* ys = a[j]->qs + 32 * s;
        __m512i dot0 = _mm512_setzero_si512(), dot1 = _mm512_setzero_si512();
        if constexpr (kOneChain) {
#pragma GCC unroll 8
          for (int m = 0; m < 8; ++m) dot0 = DpbusdBroadcast(dot0, u[m], ys + 4 * m);
        } else {
#pragma GCC unroll 4
          for (int m = 0; m < 4; ++m) {
            dot0 = DpbusdBroadcast(dot0, u[m], ys + 4 * m);
            dot1 = DpbusdBroadcast(dot1, u[4 + m], ys + 16 + 4 * m);
          }
        }
        if constexpr (Q::kTwoScales) {
          const __m512i scaled = _mm512_add_epi32(_mm512_mullo_epi32(dot0, sc0), _mm512_mullo_epi32(dot1, sc1));
          isum[j] = _mm512_add_epi32(isum[j], scaled);
        } else {
          isum[j] = _mm512_add_epi32(isum[j], _mm512_mullo_epi32(_mm512_add_epi32(dot0, dot1), sc0));
        }
        if constexpr (Q::kOffsetShift >= 0)
          isum[j] = DpwssdBroadcast(isum[j], offset, a[j]->bsums + 2 * s);
        if constexpr (Q::kMins == Mins::kPerGroup)
          msum[j] = DpwssdBroadcast(msum[j], group_mins, a[j]->bsums + 2 * s);
      }
    };
    // Unrolled, the shifts that pick a sub-block's bits are constants and the
    // bit planes it shares with its neighbours load once; Q4_K and IQ4_XS,
    // whose quants unpack in two steps, measured faster in the loop.
    if constexpr (Q::kUnrollSubBlocks) {
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) sub_block(s);
    } else {
      for (int s = 0; s < 8; ++s) sub_block(s);
    }
    if constexpr (Q::kMins == Mins::kPerSubBlock) {
      // Each token's 8 sub-block sums (its bsums added in pairs, |sum| <=
      // 32 * 127) as int16, so one vpdpwssd takes two sub-blocks' mins.
      alignas(16) int16_t sums[kTokens][8];
#pragma GCC unroll 8
      for (int j = 0; j < kTokens; ++j) {
        const __m256i pairs =
            _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[j]->bsums)), _mm256_set1_epi16(1));
        _mm_store_si128(reinterpret_cast<__m128i*>(sums[j]),
                        _mm_packs_epi32(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1)));
      }
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m512i mins = Q::SubBlockMinPairs(b0, b1, k);
#pragma GCC unroll 8
        for (int j = 0; j < kTokens; ++j) msum[j] = DpwssdBroadcast(msum[j], mins, sums[j] + 2 * k);
      }
    }
    const __m512 dw = RowScales(b0.d, b1.d);
    __m512 dmw = _mm512_setzero_ps();
    if constexpr (Q::kMins != Mins::kNone) dmw = RowScales(b0.dmin, b1.dmin);
#pragma GCC unroll 8
    for (int j = 0; j < kTokens; ++j) {
      const __m512 dy = _mm512_set1_ps(a[j]->d);
      float* o = out + j * ldo;
      __m512 acc = _mm512_fmadd_ps(_mm512_mul_ps(dw, dy), _mm512_cvtepi32_ps(isum[j]), LoadOut<G>(o));
      if constexpr (Q::kMins != Mins::kNone)
        acc = _mm512_fnmadd_ps(_mm512_mul_ps(dmw, dy), _mm512_cvtepi32_ps(msum[j]), acc);
      StoreOut<G>(o, acc);
    }
  }
}

template <int G>
TileKernel Make(GgmlType type) {
  constexpr int kRows = G * kPackRows;
  switch (type) {
    case GgmlType::kQ4_0:
      return {GemmRows<BlockQ4_0x8, G>, kRows, kTokens};
    case GgmlType::kQ8_0:
      return {GemmRows<BlockQ8_0x8, G>, kRows, kTokens};
    case GgmlType::kQ4_1:
      return {GemmRows<BlockQ4_1x8, G>, kRows, kTokens};
    case GgmlType::kQ5_0:
      return {GemmRows<BlockQ5_0x8, G>, kRows, kTokens};
    case GgmlType::kQ5_1:
      return {GemmRows<BlockQ5_1x8, G>, kRows, kTokens};
    case GgmlType::kIQ4_NL:
      return {GemmRows<BlockIQ4_NLx8, G>, kRows, kTokens};
    case GgmlType::kQ4_K:
      return {GemmSuperRows<BlockQ4_Kx8, G>, kRows, kTokens};
    case GgmlType::kQ5_K:
      return {GemmSuperRows<BlockQ5_Kx8, G>, kRows, kTokens};
    case GgmlType::kQ3_K:
      return {GemmSuperRows<BlockQ3_Kx8, G>, kRows, kTokens};
    case GgmlType::kQ6_K:
      return {GemmSuperRows<BlockQ6_Kx8, G>, kRows, kTokens};
    case GgmlType::kQ2_K:
      return {GemmSuperRows<BlockQ2_Kx8, G>, kRows, kTokens};
    case GgmlType::kIQ4_XS:
      return {GemmSuperRows<BlockIQ4_XSx8, G>, kRows, kTokens};
    default:
      return {};
  }
}

}  // namespace

TileKernel PackedGemm(GgmlType type) { return Make<2>(type); }
TileKernel PackedGemmOneGroup(GgmlType type) { return Make<1>(type); }

}  // namespace valet::avx512vnni

VALET_TARGET_END()

#else

namespace valet::avx512vnni {
TileKernel PackedGemm(GgmlType) { return {}; }
TileKernel PackedGemmOneGroup(GgmlType) { return {}; }
}  // namespace valet::avx512vnni

#endif
