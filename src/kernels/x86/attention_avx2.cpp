// AVX2 fused attention (x86/attention.h), two query rows per pass.
#include "kernels/x86/avx2.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/quant_blocks.h"
#include "kernels/ref/scalar.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define VALET_ATTN_TARGET "avx2,fma,f16c"
#define VALET_ATTN_NS avx2
#define VALET_ATTN_PASS 2
#include "kernels/x86/attention.h"

namespace valet::avx2 {
void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work) {
  attention_x86::Run(rows, keys, work);
}
}  // namespace valet::avx2

#else

namespace valet::avx2 {
void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work) {
  scalar::Attention(rows, keys, work);
}
}  // namespace valet::avx2

#endif
