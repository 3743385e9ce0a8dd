// AVX2 dot products of Q8_0 and Q4_0 rows with Q8_0 activations (the other
// types' vec_dots are their 1x1 tiles, tiles_k.h). The 8 float lanes are kept
// across blocks (a scalar update per block would cost a horizontal sum every
// 32 elements), so these agree with the reference to rounding only.
#include "kernels/x86/avx2.h"

#include "kernels/quant_blocks.h"
#include "kernels/ref/scalar.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "kernels/simd_target.h"

VALET_TARGET_BEGIN("avx2,fma,f16c")

namespace valet::avx2 {
namespace {

inline float HsumPs(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Signed int8 x int8 products summed in 4s into 8 int32 lanes. maddubs takes an
// unsigned first operand, so x's sign moves onto y; exact while no operand is
// -128 (quantizers emit [-127, 127]).
inline __m256i MulSumI8(__m256i x, __m256i y) {
  const __m256i dot16 = _mm256_maddubs_epi16(_mm256_abs_epi8(x), _mm256_sign_epi8(y, x));
  return _mm256_madd_epi16(dot16, _mm256_set1_epi16(1));
}

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

}  // namespace

float DotQ8_0(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ8_0*>(x);
  const auto* b = static_cast<const BlockQ8_0*>(y);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(a[i].d) * _cvtsh_ss(b[i].d));
    const __m256i p = MulSumI8(Load256(a[i].qs), Load256(b[i].qs));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
  }
  return HsumPs(acc);
}

float DotQ4_0(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ4_0*>(x);
  const auto* b = static_cast<const BlockQ8_0*>(y);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i eight = _mm256_set1_epi8(8);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(a[i].d) * _cvtsh_ss(b[i].d));
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a[i].qs));
    // Low 128 bits: low nibbles (elements 0..15); high 128 bits: high nibbles.
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1);
    const __m256i q = _mm256_sub_epi8(_mm256_and_si256(both, low4), eight);
    const __m256i p = MulSumI8(q, Load256(b[i].qs));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
  }
  return HsumPs(acc);
}

}  // namespace valet::avx2

VALET_TARGET_END()

#else

namespace valet::avx2 {
float DotQ8_0(int64_t n, const void* x, const void* y) { return scalar::DotQ8_0(n, x, y); }
float DotQ4_0(int64_t n, const void* x, const void* y) { return scalar::DotQ4_0(n, x, y); }
}  // namespace valet::avx2

#endif
