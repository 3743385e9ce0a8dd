// AVX2+FMA+F16C activation converters: F16 to and from float and the Q8_0,
// Q8_1 and Q8_K activation quantizers, bit-exact with the reference.
#include "kernels/x86/avx2.h"

#include <cstring>

#include "kernels/fp16.h"
#include "kernels/packed_blocks.h"
#include "kernels/quant_blocks.h"
#include "kernels/ref/scalar.h"
#include "kernels/rounding.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VALET_AVX2_COMPILED 1
#include <immintrin.h>
#define VALET_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

namespace valet::avx2 {

#if VALET_AVX2_COMPILED

namespace {

VALET_AVX2 inline float HmaxPs(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

VALET_AVX2 inline int HsumEpi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

VALET_AVX2 inline __m256 AbsPs(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// Four vectors of 8 int32 (each in [-128, 127]) into 32 int8 in order.
VALET_AVX2 inline __m256i PackI32ToI8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i packed = _mm256_packs_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

VALET_AVX2 inline __m256 LoadF16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

}  // namespace

bool Compiled() { return true; }

VALET_AVX2 void F16ToFloat(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, LoadF16(h + i));
  for (; i < n; ++i) dst[i] = Fp16ToFp32(h[i]);
}

VALET_AVX2 void F16FromFloat(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i v = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), v);
  }
  for (; i < n; ++i) h[i] = Fp32ToFp16(src[i]);
}

namespace {

// One block of Q8_0/Q8_1 quantization (llama.cpp's x86 rule: scale by
// 127/amax, round half to even); returns d (unrounded) and the quants' sum.
VALET_AVX2 __attribute__((always_inline)) inline float QuantizeBlock32(const float* x, int8_t* qs, int* sum) {
  __m256 v[4];
  __m256 vmax = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_loadu_ps(x + 8 * k);
    vmax = _mm256_max_ps(vmax, AbsPs(v[k]));
  }
  const float amax = HmaxPs(vmax);
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  const __m256 mul = _mm256_set1_ps(id);
  __m256i q[4];
  for (int k = 0; k < 4; ++k) {
    const __m256 scaled = _mm256_mul_ps(v[k], mul);
    q[k] = _mm256_cvtps_epi32(
        _mm256_round_ps(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), PackI32ToI8(q[0], q[1], q[2], q[3]));
  *sum = HsumEpi32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
  return amax / 127.0f;
}

}  // namespace

VALET_AVX2 void Q8_0FromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    int sum;
    b[i].d = Fp32ToFp16(QuantizeBlock32(src + i * kQK8_0, b[i].qs, &sum));
  }
}

VALET_AVX2 void Q8_0SFromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0S*>(dst);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    int sum;
    b[i].d = Fp16ToFp32(Fp32ToFp16(QuantizeBlock32(src + i * kQK8_0, b[i].qs, &sum)));
    b[i].sum = sum;
  }
}

VALET_AVX2 void Q8_1FromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    int sum;
    const float d = QuantizeBlock32(src + i * kQK8_0, b[i].qs, &sum);
    b[i].d = Fp32ToFp16(d);
    b[i].s = Fp32ToFp16(d * static_cast<float>(sum));
  }
}

namespace {

// FillQ8KBsums with vectors: each 32 quants' two sums of 16.
VALET_AVX2 inline void FillQ8KBsumsAvx2(BlockQ8_K* b) {
  for (int k = 0; k < kQK_K / 32; ++k) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * k));
    // Sums of 2, then of 4 (lanes 0-3: the first 16 quants, 4-7: the second), then of 16.
    const __m256i s4 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1));
    const __m256i s8 = _mm256_hadd_epi32(s4, s4);
    const __m256i s16 = _mm256_hadd_epi32(s8, s8);
    b->bsums[2 * k] = static_cast<int16_t>(_mm256_cvtsi256_si32(s16));
    b->bsums[2 * k + 1] = static_cast<int16_t>(_mm256_extract_epi32(s16, 4));
  }
}

// The reference's "first element of largest magnitude": the vector pass finds
// the magnitude, a scan finds where it first occurs.
VALET_AVX2 float SignedAbsMaxAvx2(const float* x) {
  __m256 vmax = _mm256_setzero_ps();
  for (int k = 0; k < kQK_K; k += 8) vmax = _mm256_max_ps(vmax, AbsPs(_mm256_loadu_ps(x + k)));
  const __m256 amax = _mm256_set1_ps(HmaxPs(vmax));
  for (int k = 0; k < kQK_K; k += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(AbsPs(_mm256_loadu_ps(x + k)), amax, _CMP_EQ_OQ));
    if (mask != 0) return x[k + __builtin_ctz(static_cast<unsigned>(mask))];
  }
  return 0.0f;
}

}  // namespace

VALET_AVX2 void Q8_KFromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  const __m256i limit = _mm256_set1_epi32(127);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    const float max = SignedAbsMaxAvx2(x);
    if (max == 0.0f) {
      std::memset(&b[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    const __m256 mul = _mm256_set1_ps(iscale);
    for (int k = 0; k < kQK_K; k += 32) {
      __m256i q[4];
      for (int m = 0; m < 4; ++m) {
        // cvtps rounds to nearest-even under the default MXCSR, as NearestInt does.
        const __m256i r = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + k + 8 * m), mul));
        q[m] = _mm256_min_epi32(r, limit);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[i].qs + k), PackI32ToI8(q[0], q[1], q[2], q[3]));
    }
    FillQ8KBsumsAvx2(&b[i]);
    b[i].d = 1.0f / iscale;
  }
}

#else  // !VALET_AVX2_COMPILED

bool Compiled() { return false; }
void F16ToFloat(const void* src, float* dst, int64_t n) { scalar::F16ToFloat(src, dst, n); }
void F16FromFloat(const float* src, void* dst, int64_t n) { scalar::F16FromFloat(src, dst, n); }
void Q8_0FromFloat(const float* src, void* dst, int64_t n) { scalar::Q8_0FromFloat(src, dst, n); }
void Q8_1FromFloat(const float* src, void* dst, int64_t n) { scalar::Q8_1FromFloat(src, dst, n); }
void Q8_KFromFloat(const float* src, void* dst, int64_t n) { scalar::Q8_KFromFloat(src, dst, n); }
void Q8_0SFromFloat(const float* src, void* dst, int64_t n) {
  WidenQ8_0Blocks(scalar::Q8_0FromFloat, src, static_cast<BlockQ8_0S*>(dst), n / kQK8_0);
}

#endif

}  // namespace valet::avx2
