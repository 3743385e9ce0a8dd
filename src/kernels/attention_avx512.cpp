// AVX-512 fused attention (kernels/attention_x86.inc): the AVX2 kernel with
// AVX-512VL's 32 vector registers, four query rows per pass. The same
// operations per row, so the same bits as the reference and the AVX2 variant.
#include "kernels/kernels_vnni.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/kernels_scalar.h"
#include "kernels/quant_blocks.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "kernels/simd_target.h"

VALET_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512vl")

namespace valet::avx512vnni {
namespace {

constexpr int kPass = 4;
#include "kernels/attention_x86.inc"

}  // namespace

void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work) {
  Run(rows, keys, work);
}

}  // namespace valet::avx512vnni

VALET_TARGET_END()

#else

namespace valet::avx512vnni {
void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work) {
  scalar::Attention(rows, keys, work);
}
}  // namespace valet::avx512vnni

#endif
