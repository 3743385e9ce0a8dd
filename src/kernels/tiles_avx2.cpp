// The tile kernels (tiles_x86.h) with AVX2 int8 products: maddubs then madd.
#include "kernels/kernels_avx2.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define VALET_TILE_WIDE_U8 0
#define VALET_TILE_NS avx2
#define VALET_DOT_U8I8(acc, u, s) \
  _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
#define VALET_DOT_I16(acc, a, b) _mm256_add_epi32((acc), _mm256_madd_epi16((a), (b)))
#include "kernels/tiles_x86.h"
#pragma GCC pop_options

#else

namespace valet::avx2 {
TileKernel GemmTile(GgmlType) { return {}; }
TileKernel GemvTile(GgmlType) { return {}; }
}  // namespace valet::avx2

#endif
