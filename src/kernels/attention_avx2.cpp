// AVX2 fused attention (kernels/attention_x86.inc), two query rows per pass.
#include "kernels/kernels_avx2.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/kernels_scalar.h"
#include "kernels/quant_blocks.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "kernels/simd_target.h"

VALET_TARGET_BEGIN("avx2,fma,f16c")

namespace valet::avx2 {
namespace {

constexpr int kPass = 2;
#include "kernels/attention_x86.inc"

}  // namespace

void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work) {
  Run(rows, keys, work);
}

}  // namespace valet::avx2

VALET_TARGET_END()

#else

namespace valet::avx2 {
void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work) {
  scalar::Attention(rows, keys, work);
}
}  // namespace valet::avx2

#endif
