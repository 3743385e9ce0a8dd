// AVX-512 fused attention (x86/attention.h): the AVX2 kernel with
// AVX-512VL's 32 vector registers, four query rows per pass. The same
// operations per row, so the same bits as the reference and the AVX2 variant.
#include "kernels/x86/vnni.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/quant_blocks.h"
#include "kernels/ref/scalar.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define VALET_ATTN_TARGET "avx2,fma,f16c,avx512f,avx512vl"
#define VALET_ATTN_NS avx512vnni
#define VALET_ATTN_PASS 4
#include "kernels/x86/attention.h"

namespace valet::avx512vnni {
void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work) {
  attention_x86::Run(rows, keys, work);
}
}  // namespace valet::avx512vnni

#else

namespace valet::avx512vnni {
void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work) {
  scalar::Attention(rows, keys, work);
}
}  // namespace valet::avx512vnni

#endif
