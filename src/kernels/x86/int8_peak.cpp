// The x86 int8 peak loops: AVX2's vpmaddubsw + vpmaddwd + vpaddd idiom, and
// vpdpbusd in its VEX (AVX-VNNI, ymm) and EVEX (AVX-512 VNNI, zmm) forms.
// Each instruction is issued from independent accumulator chains, so the loop
// measures throughput, not latency.
#include "kernels/int8_peak_loops.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "kernels/simd_target.h"

namespace valet::int8_peak {
namespace {

// vpdpbusd's latency (4-5 cycles) times its throughput (1-2 per cycle) is at
// most 10 instructions in flight; 12 chains leave a margin.
constexpr int kChains = 12;

}  // namespace
}  // namespace valet::int8_peak

VALET_TARGET_BEGIN("avx2")
namespace valet::int8_peak {
namespace {

uint32_t Lanes(__m256i v) {
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  uint32_t s = 0;
  for (uint32_t x : lanes) s += x;
  return s;
}

// Only vpaddd (1 cycle) carries a chain here, so 6 chains keep both multiply
// ports busy, and 6 weights + 6 sums + a + ones + 2 temporaries fit the 16 ymm
// registers. Each chain has its own weights: with one, the compiler would
// compute the product once for all chains.
constexpr int kAvx2Chains = 6;

uint32_t Avx2Maddubs(int64_t iterations, const uint8_t* seed) {
  __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(seed));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i w[kAvx2Chains], acc[kAvx2Chains];
  for (int k = 0; k < kAvx2Chains; ++k) {
    w[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(seed + 32 * (k + 1)));
    acc[k] = _mm256_setzero_si256();
  }
  for (int64_t i = 0; i < iterations; ++i) {
    // a is "changed" by an empty asm, so the products cannot leave the loop.
    __asm__ volatile("" : "+x"(a));
    for (int k = 0; k < kAvx2Chains; ++k) {
      // 32 u8 x s8 products summed in pairs (int16), then pairs of those (int32).
      acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(_mm256_maddubs_epi16(a, w[k]), ones));
    }
  }
  __m256i s = acc[0];
  for (int k = 1; k < kAvx2Chains; ++k) s = _mm256_add_epi32(s, acc[k]);
  return Lanes(s);
}

}  // namespace
}  // namespace valet::int8_peak
VALET_TARGET_END()

VALET_TARGET_BEGIN("avx2,avxvnni")
namespace valet::int8_peak {
namespace {

uint32_t AvxVnniDpbusd(int64_t iterations, const uint8_t* seed) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(seed));
  const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(seed + 32));
  __m256i acc[kChains];
  for (__m256i& v : acc) v = _mm256_setzero_si256();
  for (int64_t i = 0; i < iterations; ++i) {
    for (__m256i& v : acc) v = _mm256_dpbusd_avx_epi32(v, a, w);  // 32 u8 x s8 into 8 int32
  }
  __m256i s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm256_add_epi32(s, acc[k]);
  return Lanes(s);
}

}  // namespace
}  // namespace valet::int8_peak
VALET_TARGET_END()

VALET_TARGET_BEGIN("avx2,avx512f,avx512bw,avx512vl,avx512vnni")
namespace valet::int8_peak {
namespace {

uint32_t Avx512Dpbusd(int64_t iterations, const uint8_t* seed) {
  const __m512i a = _mm512_loadu_si512(seed);
  const __m512i w = _mm512_loadu_si512(seed + 64);
  __m512i acc[kChains];
  for (__m512i& v : acc) v = _mm512_setzero_si512();
  for (int64_t i = 0; i < iterations; ++i) {
    for (__m512i& v : acc) v = _mm512_dpbusd_epi32(v, a, w);  // 64 u8 x s8 into 16 int32
  }
  __m512i s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm512_add_epi32(s, acc[k]);
  // Through memory: GCC 12's 512-bit reduce and extract intrinsics trip
  // -Werror=uninitialized inside its own headers.
  alignas(64) uint32_t lanes[16];
  _mm512_store_si512(lanes, s);
  uint32_t sum = 0;
  for (uint32_t x : lanes) sum += x;
  return sum;
}

}  // namespace
}  // namespace valet::int8_peak
VALET_TARGET_END()

namespace valet::int8_peak {

PeakLoop X86Loop(std::string_view table) {
  if (table == "avx2") return {"vpmaddubsw+vpmaddwd ymm", int64_t{kAvx2Chains} * 32, Avx2Maddubs};
  if (table == "vnni") return {"vpdpbusd ymm (VEX)", int64_t{kChains} * 32, AvxVnniDpbusd};
  // The BF16 table multiplies int8 as the VNNI one does.
  if (table == "avx512vnni" || table == "avx512bf16") return {"vpdpbusd zmm", int64_t{kChains} * 64, Avx512Dpbusd};
  return {};
}

}  // namespace valet::int8_peak

#else

namespace valet::int8_peak {
PeakLoop X86Loop(std::string_view) { return {}; }
}  // namespace valet::int8_peak

#endif
