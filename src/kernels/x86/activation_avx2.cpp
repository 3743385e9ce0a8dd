// AVX2 activations (kernels/activation.h), bit-exact with the reference:
// the same operations on 8 lanes.
#include "kernels/activation.h"
#include "kernels/ref/scalar.h"
#include "kernels/x86/avx2.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "kernels/simd_target.h"

VALET_TARGET_BEGIN("avx2,fma")

namespace valet::avx2 {
namespace {

// 2^k for k in [-126, 127] per lane.
__m256 Pow2(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

__m256 Exp(__m256 x) {
  __m256 xc = _mm256_max_ps(x, _mm256_set1_ps(kExpMin));
  xc = _mm256_min_ps(xc, _mm256_set1_ps(kExpMax));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(kExpLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kExpLn2Hi), xc);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kExpLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpPoly[7]);
#pragma GCC unroll 7
  for (int k = 6; k >= 0; --k) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpPoly[k]));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  return _mm256_mul_ps(_mm256_mul_ps(p, Pow2(n1)), Pow2(_mm256_sub_epi32(ni, n1)));
}

}  // namespace

void SwiGlu(int64_t n, float* gate, const float* up) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, Exp(_mm256_xor_ps(g, sign))));
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
  }
  scalar::SwiGlu(n - i, gate + i, up + i);
}

}  // namespace valet::avx2

VALET_TARGET_END()

#else

namespace valet::avx2 {
void SwiGlu(int64_t n, float* gate, const float* up) { scalar::SwiGlu(n, gate, up); }
}  // namespace valet::avx2

#endif
