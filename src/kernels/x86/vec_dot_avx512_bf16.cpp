// BF16 weight rows with AVX512_BF16's vdpbf16ps: 32 products per
// instruction, accumulated in 16 float lanes. BF16 activations are already
// the type's vec_dot_type (llama.cpp converts them the same way), so nothing
// is widened. Each product of two bf16 values is exact in float and the
// instruction rounds every accumulation to nearest even, flushing denormals;
// the sums differ from the reference (double accumulation) only by
// summation order, as the AVX2 float tiles do.
#include "kernels/x86/vnni.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "kernels/prefetch.h"
#include "kernels/simd_target.h"

VALET_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512bf16")
#if !defined(__clang__)
// GCC 12's _mm512_undefined_* initialise a vector with itself, which
// -W(maybe-)uninitialized flag in many 512-bit intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace valet::avx512bf16 {
namespace {

constexpr int64_t kStep = 32;  // bf16 elements per vector

// Elements [k, k + count) of a row, zeros past count (count <= 32).
inline __m512bh Load(const uint16_t* row, int64_t k, int64_t count) {
  const __mmask32 keep = count >= kStep ? ~__mmask32{0} : (__mmask32{1} << count) - 1;
  return reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(keep, row + k));
}

// R weight rows by C tokens, R x C accumulators of 16 lanes; the tail is one
// masked step, whose zeros add nothing.
template <int R, int C>
void GemmBf16(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out, int64_t ldo) {
  const uint16_t* xr[R];
  const uint16_t* yr[C];
  for (int i = 0; i < R; ++i) xr[i] = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(x) + i * ldx);
  for (int j = 0; j < C; ++j) yr[j] = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(y) + j * ldy);
  __m512 acc[R][C];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < n; k += kStep) {
    const int64_t count = n - k;
    __m512bh yv[C];
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) yv[j] = Load(yr[j], k, count);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      if constexpr (C == 1) PrefetchBlockAhead<kCacheLineBytes, 1024>(xr[i] + k);
      const __m512bh xv = Load(xr[i], k, count);
#pragma GCC unroll 16
      for (int j = 0; j < C; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv, yv[j]);
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < C; ++j) out[j * ldo + i] = _mm512_reduce_add_ps(acc[i][j]);
  }
}

float DotBf16(int64_t n, const void* x, const void* y) {
  float out;
  GemmBf16<1, 1>(n, x, 0, y, 0, &out, 0);
  return out;
}

}  // namespace

// 4 x 4 accumulators plus 5 operands fit the 32 zmm registers.
void Patch(KernelTable& t) {
  TypeKernels& k = t.types[static_cast<uint32_t>(GgmlType::kBF16)];
  k.vec_dot = DotBf16;
  k.gemm = {GemmBf16<4, 4>, 4, 4};
  k.gemv = {GemmBf16<4, 1>, 4, 1};
}

}  // namespace valet::avx512bf16

VALET_TARGET_END()

#else

namespace valet::avx512bf16 {
void Patch(KernelTable&) {}
}  // namespace valet::avx512bf16

#endif
