// AVX-512 VNNI row-group GEMMs: two tokens per 512-bit vector. A row
// group's 8 rows sit in lanes 0-7 for one token and again in lanes 8-15 for
// the next, so each 32-byte weight chunk is unpacked once into both halves and
// one vpdpbusd does 8 rows x 2 tokens x 4 quants. Per output the integers and
// the float operations are the reference's, in its order, so the results
// equal the scalar table's bit for bit. Decode (one token) keeps the AVX2
// kernels: it waits on memory, not on arithmetic.
#include "kernels/packed_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <array>
#include <cstring>
#include <type_traits>

#include "kernels/packed_blocks.h"
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

constexpr int kTokens = 8;  // per call: 4 vectors of token pairs
constexpr int kPairs = kTokens / 2;

// The IQ4_NL levels plus 128, as the unsigned bytes 1..241 vpdpbusd takes.
constexpr std::array<uint8_t, 16> kIQ4NLBiased = [] {
  std::array<uint8_t, 16> biased{};
  for (int i = 0; i < 16; ++i) biased[i] = static_cast<uint8_t>(kIQ4NLValues[i] + 128);
  return biased;
}();

inline __m512i Broadcast128(const void* p) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}
inline __m512i Broadcast256(const void* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
}

// 32 bytes of one token in the low half, of the next in the high half.
inline __m512i LoadPair(const void* lo, const void* hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(lo))),
                            _mm256_loadu_si256(static_cast<const __m256i*>(hi)), 1);
}

// Lanes 0-7 one value, lanes 8-15 the other.
inline __m512i PairSet(int32_t lo, int32_t hi) {
  return _mm512_mask_mov_epi32(_mm512_set1_epi32(lo), 0xff00, _mm512_set1_epi32(hi));
}
inline __m512 PairSet(float lo, float hi) {
  return _mm512_mask_mov_ps(_mm512_set1_ps(lo), 0xff00, _mm512_set1_ps(hi));
}
// The same of the 4 bytes at each address.
inline __m512i PairLoad4(const void* lo, const void* hi) {
  int32_t a, b;
  std::memcpy(&a, lo, sizeof(a));
  std::memcpy(&b, hi, sizeof(b));
  return PairSet(a, b);
}

// pick[i]: dword i of the first token's 32 bytes to lanes 0-7, of the second's to lanes 8-15.
inline void PairPicks(__m512i* pick) {
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) pick[i] = PairSet(i, 8 + i);
}

// The 8 rows' fp16 scales (or offsets) in both halves.
inline __m512 RowScales(const uint16_t* h) {
  return _mm512_cvtph_ps(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h))));
}

// Pair p's lanes 0-7 to token 2p's 8 outputs, lanes 8-15 to token 2p + 1's.
inline void StorePairs(const __m512* acc, float* out, int64_t ldo) {
#pragma GCC unroll 4
  for (int p = 0; p < kPairs; ++p) {
    _mm256_storeu_ps(out + (2 * p) * ldo, _mm512_castps512_ps256(acc[p]));
    _mm256_storeu_ps(out + (2 * p + 1) * ldo, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[p]), 1)));
  }
}

// The unsigned form vpdpbusd takes of each type's quants: u = q + bias, so
// the dot is sum(u y) - bias * sum(y). u[i], lanes r and 8 + r: the 4 quants
// of row r that meet activation dword i (elements 4i..4i+3).
template <class Packed>
struct Unsigned {
  static constexpr bool kOffset = requires(const Packed& p) { p.m; };  // Q4_1, Q5_1: q >= 0
  static constexpr bool kFiveBits = requires(const Packed& p) { p.qh; };
  static constexpr bool kTable = std::is_same_v<Packed, BlockIQ4_NLx8>;
  static constexpr bool kEight = std::is_same_v<Packed, BlockQ8_0x8>;
  static constexpr int kBias = kOffset ? 0 : kEight || kTable ? 128 : kFiveBits ? 16 : 8;

  static void Load(const Packed& b, __m512i* u) {
    if constexpr (kEight) {
      const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) u[i] = _mm512_xor_si512(Broadcast256(b.qs + 32 * i), flip);
    } else {
      const __m512i low4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
      __m512i qh = _mm512_setzero_si512();
      if constexpr (kFiveBits) qh = Broadcast256(b.qh);
#pragma GCC unroll 4
      for (int m = 0; m < 4; ++m) {
        const __m512i raw = Broadcast256(b.qs + 32 * m);
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

template <class Packed>
void GemmPairs(int64_t n, const void* x, size_t, const void* y, size_t ldy, float* out, int64_t ldo) {
  using U = Unsigned<Packed>;
  using Act = std::conditional_t<U::kOffset, BlockQ8_1S, BlockQ8_0S>;
  const auto* w = static_cast<const Packed*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  __m512i pick[8];
  PairPicks(pick);
  __m512 acc[kPairs];
#pragma GCC unroll 4
  for (int p = 0; p < kPairs; ++p) acc[p] = _mm512_setzero_ps();
  const int64_t nb = n / kQK8_0;
  for (int64_t l = 0; l < nb; ++l) {
    const Packed& b = w[l];
    const __m512 dw = RowScales(b.d);
    __m512 mw = _mm512_setzero_ps();
    if constexpr (U::kOffset) mw = RowScales(b.m);
    __m512i u[8];
    U::Load(b, u);
#pragma GCC unroll 4
    for (int p = 0; p < kPairs; ++p) {
      const Act& a0 = reinterpret_cast<const Act*>(yb + (2 * p) * ldy)[l];
      const Act& a1 = reinterpret_cast<const Act*>(yb + (2 * p + 1) * ldy)[l];
      const __m512i ya = LoadPair(a0.qs, a1.qs);
      __m512i isum = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) isum = _mm512_dpbusd_epi32(isum, u[i], _mm512_permutexvar_epi32(pick[i], ya));
      if constexpr (U::kBias != 0) isum = _mm512_sub_epi32(isum, PairSet(U::kBias * a0.sum, U::kBias * a1.sum));
      const __m512 d = _mm512_mul_ps(dw, PairSet(a0.d, a1.d));
      acc[p] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(isum), acc[p]);
      if constexpr (U::kOffset) acc[p] = _mm512_fmadd_ps(mw, PairSet(a0.s, a1.s), acc[p]);
    }
  }
  StorePairs(acc, out, ldo);
}

// Super-block types. Per sub-block s (32 elements) and token pair, the
// unsigned quants' dots with vpdpbusd, exact in int32, then times the rows'
// scales (one per sub-block, or one per 16 elements: the dot of chunks 0-3
// and of 4-7); the unsigned offset and the mins come off against the
// activations' block sums. The integers equal the reference's and the float
// steps are its own, in its order.
//
// Lanes r and 8 + r: row r's byte i of 8 consecutive bytes, widened to int32.
template <bool kSigned>
inline __m512i RowBytes(const void* p) {
  const __m128i v = _mm_loadl_epi64(static_cast<const __m128i*>(p));
  const __m128i twice = _mm_unpacklo_epi64(v, v);
  return kSigned ? _mm512_cvtepi8_epi32(twice) : _mm512_cvtepu8_epi32(twice);
}

// Lanes r and 8 + r: byte 2r + half of 16 bytes (row r's byte of group 2s + half), as int32.
inline __m512i GroupBytes(const void* p, int half) {
  const __m512i all = _mm512_cvtepi8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  const __m512i even = _mm512_set_epi32(14, 12, 10, 8, 6, 4, 2, 0, 14, 12, 10, 8, 6, 4, 2, 0);
  return _mm512_permutexvar_epi32(_mm512_add_epi32(even, _mm512_set1_epi32(half)), all);
}

// Four bit planes of 2-bit quants (Q2_K, Q3_K's low bits, Q6_K's high bits):
// sub-block s's bits of chunk m.
inline __m512i TwoBits(const uint8_t* plane, int s, int m) {
  return _mm512_and_si512(_mm512_srli_epi16(Broadcast256(plane + 256 * (s / 4) + 32 * m), 2 * (s % 4)),
                          _mm512_set1_epi8(3));
}

enum class Mins { kNone, kPerSubBlock, kPerGroup };

template <class Packed>
struct SuperQuants;

// Q4_K and Q5_K: one 6-bit scale per sub-block and one min.
template <class Packed>
  requires std::is_same_v<Packed, BlockQ4_Kx8> || std::is_same_v<Packed, BlockQ5_Kx8>
struct SuperQuants<Packed> {
  static constexpr bool kTwoScales = false;
  static constexpr int kOffsetShift = -1;  // unsigned already
  static constexpr Mins kMins = Mins::kPerSubBlock;
  static void Load(const Packed& b, int s, __m512i* u) {
    const uint8_t* qs = b.qs + 256 * (s / 2);
#pragma GCC unroll 8
    for (int m = 0; m < 8; ++m) {
      const __m512i raw = Broadcast256(qs + 32 * m);
      u[m] = _mm512_and_si512(s % 2 == 0 ? raw : _mm512_srli_epi16(raw, 4), _mm512_set1_epi8(0x0f));
      if constexpr (std::is_same_v<Packed, BlockQ5_Kx8>) {
        const __m512i hb = _mm512_slli_epi16(_mm512_srli_epi16(Broadcast256(b.qh + 32 * m), s), 4);
        u[m] = _mm512_or_si512(u[m], _mm512_and_si512(hb, _mm512_set1_epi8(0x10)));
      }
    }
  }
  static __m512i Scale(const Packed& b, int s, int) { return RowBytes<false>(b.sc + 8 * s); }
};

// Q6_K (u = q + 32) and Q3_K (u = q + 4): a signed scale per 16 elements.
template <class Packed>
  requires std::is_same_v<Packed, BlockQ6_Kx8> || std::is_same_v<Packed, BlockQ3_Kx8>
struct SuperQuants<Packed> {
  static constexpr bool kTwoScales = true;
  static constexpr int kOffsetShift = std::is_same_v<Packed, BlockQ6_Kx8> ? 5 : 2;
  static constexpr Mins kMins = Mins::kNone;
  static void Load(const Packed& b, int s, __m512i* u) {
#pragma GCC unroll 8
    for (int m = 0; m < 8; ++m) {
      if constexpr (std::is_same_v<Packed, BlockQ6_Kx8>) {
        const __m512i lo = _mm512_and_si512(
            _mm512_srli_epi16(Broadcast256(b.ql + 256 * (s / 2) + 32 * m), 4 * (s % 2)), _mm512_set1_epi8(0x0f));
        u[m] = _mm512_or_si512(lo, _mm512_slli_epi16(TwoBits(b.qh, s, m), 4));
      } else {
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(Broadcast256(b.hmask + 32 * m), s), _mm512_set1_epi8(1));
        u[m] = _mm512_or_si512(TwoBits(b.qs, s, m), _mm512_slli_epi16(hi, 2));
      }
    }
  }
  static __m512i Scale(const Packed& b, int s, int half) { return GroupBytes(b.sc + 16 * s, half); }
};

// Q2_K: 2-bit quants, a 4-bit scale and min per 16 elements.
template <>
struct SuperQuants<BlockQ2_Kx8> {
  static constexpr bool kTwoScales = true;
  static constexpr int kOffsetShift = -1;
  static constexpr Mins kMins = Mins::kPerGroup;
  static void Load(const BlockQ2_Kx8& b, int s, __m512i* u) {
#pragma GCC unroll 8
    for (int m = 0; m < 8; ++m) u[m] = TwoBits(b.qs, s, m);
  }
  static __m512i Scale(const BlockQ2_Kx8& b, int s, int half) {
    return _mm512_and_si512(GroupBytes(b.sc + 16 * s, half), _mm512_set1_epi32(0x0f));
  }
  // Lanes r, 8 + r: row r's mins of groups 2s, 2s + 1 as int16.
  static __m512i GroupMins(const BlockQ2_Kx8& b, int s) {
    return _mm512_broadcast_i64x4(
        _mm256_srli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.sc + 16 * s))), 4));
  }
};

// IQ4_XS: nibbles through the biased levels (u = v + 128), a signed scale per sub-block.
template <>
struct SuperQuants<BlockIQ4_XSx8> {
  static constexpr bool kTwoScales = false;
  static constexpr int kOffsetShift = 7;
  static constexpr Mins kMins = Mins::kNone;
  static void Load(const BlockIQ4_XSx8& b, int s, __m512i* u) {
    const __m512i low4 = _mm512_set1_epi8(0x0f), values = Broadcast128(kIQ4NLBiased.data());
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {
      const __m512i raw = Broadcast256(b.qs + 128 * s + 32 * m);
      u[m] = _mm512_shuffle_epi8(values, _mm512_and_si512(raw, low4));
      u[4 + m] = _mm512_shuffle_epi8(values, _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4));
    }
  }
  static __m512i Scale(const BlockIQ4_XSx8& b, int s, int) { return RowBytes<true>(b.sc + 8 * s); }
};

template <class Packed>
void GemmSuperPairs(int64_t n, const void* x, size_t, const void* y, size_t ldy, float* out, int64_t ldo) {
  using Q = SuperQuants<Packed>;
  const auto* w = static_cast<const Packed*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  __m512i pick[8];
  PairPicks(pick);
  __m512 acc[kPairs];
#pragma GCC unroll 4
  for (int p = 0; p < kPairs; ++p) acc[p] = _mm512_setzero_ps();
  const int64_t nb = n / kQK_K;
  for (int64_t l = 0; l < nb; ++l) {
    const Packed& b = w[l];
    const BlockQ8_K* a[kTokens];
#pragma GCC unroll 8
    for (int j = 0; j < kTokens; ++j) a[j] = reinterpret_cast<const BlockQ8_K*>(yb + j * ldy) + l;
    __m512i isum[kPairs], msum[kPairs];
#pragma GCC unroll 4
    for (int p = 0; p < kPairs; ++p) isum[p] = msum[p] = _mm512_setzero_si512();
    for (int s = 0; s < 8; ++s) {
      __m512i u[8];
      Q::Load(b, s, u);
      const __m512i sc0 = Q::Scale(b, s, 0);
      const __m512i sc1 = Q::kTwoScales ? Q::Scale(b, s, 1) : sc0;
      // The groups' int16 (scale or min) pairs that meet the block sums.
      const __m512i sc_pair = _mm512_or_si512(_mm512_and_si512(sc0, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(sc1, 16));
#pragma GCC unroll 4
      for (int p = 0; p < kPairs; ++p) {
        const __m512i ya = LoadPair(a[2 * p]->qs + 32 * s, a[2 * p + 1]->qs + 32 * s);
        __m512i dot0 = _mm512_setzero_si512(), dot1 = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int m = 0; m < 4; ++m) {
          dot0 = _mm512_dpbusd_epi32(dot0, u[m], _mm512_permutexvar_epi32(pick[m], ya));
          dot1 = _mm512_dpbusd_epi32(dot1, u[4 + m], _mm512_permutexvar_epi32(pick[4 + m], ya));
        }
        if constexpr (Q::kTwoScales) {
          isum[p] = _mm512_add_epi32(isum[p], _mm512_add_epi32(_mm512_mullo_epi32(dot0, sc0), _mm512_mullo_epi32(dot1, sc1)));
        } else {
          isum[p] = _mm512_add_epi32(isum[p], _mm512_mullo_epi32(_mm512_add_epi32(dot0, dot1), sc0));
        }
        // Both tokens' sums of groups 2s and 2s + 1, an int16 pair.
        const __m512i group_sums = PairLoad4(a[2 * p]->bsums + 2 * s, a[2 * p + 1]->bsums + 2 * s);
        if constexpr (Q::kOffsetShift >= 0) {
          isum[p] = _mm512_sub_epi32(isum[p], _mm512_madd_epi16(_mm512_slli_epi16(sc_pair, Q::kOffsetShift), group_sums));
        }
        if constexpr (Q::kMins == Mins::kPerGroup) msum[p] = _mm512_dpwssd_epi32(msum[p], Q::GroupMins(b, s), group_sums);
      }
    }
    if constexpr (Q::kMins == Mins::kPerSubBlock) {
      // Lanes r, 8 + r: row r's mins of sub-blocks 2k, 2k + 1 as int16, against
      // the sub-block sums (2k, 2k + 1) of each token, dword k of its half.
      __m512i mins[4];
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k)
        mins[k] = _mm512_broadcast_i64x4(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.mins + 16 * k))));
#pragma GCC unroll 4
      for (int p = 0; p < kPairs; ++p) {
        const __m512i sub = _mm512_madd_epi16(LoadPair(a[2 * p]->bsums, a[2 * p + 1]->bsums), _mm512_set1_epi16(1));
        const __m512i sub16 = _mm512_packs_epi32(sub, sub);
        const __m512i bs = _mm512_permutexvar_epi32(_mm512_set_epi32(13, 12, 9, 8, 13, 12, 9, 8, 5, 4, 1, 0, 5, 4, 1, 0), sub16);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) msum[p] = _mm512_dpwssd_epi32(msum[p], mins[k], _mm512_permutexvar_epi32(pick[k], bs));
      }
    }
    const __m512 dw = RowScales(b.d);
    __m512 dmw = _mm512_setzero_ps();
    if constexpr (Q::kMins != Mins::kNone) dmw = RowScales(b.dmin);
#pragma GCC unroll 4
    for (int p = 0; p < kPairs; ++p) {
      const __m512 dy = PairSet(a[2 * p]->d, a[2 * p + 1]->d);
      acc[p] = _mm512_fmadd_ps(_mm512_mul_ps(dw, dy), _mm512_cvtepi32_ps(isum[p]), acc[p]);
      if constexpr (Q::kMins != Mins::kNone) {
        acc[p] = _mm512_fnmadd_ps(_mm512_mul_ps(dmw, dy), _mm512_cvtepi32_ps(msum[p]), acc[p]);
      }
    }
  }
  StorePairs(acc, out, ldo);
}

}  // namespace

TileKernel PackedGemm(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
      return {GemmPairs<BlockQ4_0x8>, kPackRows, kTokens};
    case GgmlType::kQ8_0:
      return {GemmPairs<BlockQ8_0x8>, kPackRows, kTokens};
    case GgmlType::kQ4_1:
      return {GemmPairs<BlockQ4_1x8>, kPackRows, kTokens};
    case GgmlType::kQ5_0:
      return {GemmPairs<BlockQ5_0x8>, kPackRows, kTokens};
    case GgmlType::kQ5_1:
      return {GemmPairs<BlockQ5_1x8>, kPackRows, kTokens};
    case GgmlType::kIQ4_NL:
      return {GemmPairs<BlockIQ4_NLx8>, kPackRows, kTokens};
    case GgmlType::kQ4_K:
      return {GemmSuperPairs<BlockQ4_Kx8>, kPackRows, kTokens};
    case GgmlType::kQ5_K:
      return {GemmSuperPairs<BlockQ5_Kx8>, kPackRows, kTokens};
    case GgmlType::kQ3_K:
      return {GemmSuperPairs<BlockQ3_Kx8>, kPackRows, kTokens};
    case GgmlType::kQ6_K:
      return {GemmSuperPairs<BlockQ6_Kx8>, kPackRows, kTokens};
    case GgmlType::kQ2_K:
      return {GemmSuperPairs<BlockQ2_Kx8>, kPackRows, kTokens};
    case GgmlType::kIQ4_XS:
      return {GemmSuperPairs<BlockIQ4_XSx8>, kPackRows, kTokens};
    default:
      return {};
  }
}

}  // namespace valet::avx512vnni

VALET_TARGET_END()

#else

namespace valet::avx512vnni {
TileKernel PackedGemm(GgmlType) { return {}; }
}  // namespace valet::avx512vnni

#endif
