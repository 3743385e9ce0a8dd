// The tile kernels (tiles.h, tiles_k.h) with AVX2 int8 products:
// maddubs then madd.
#include "kernels/x86/avx2.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define VALET_TILE_TARGET "avx2,fma,f16c"
#define VALET_TILE_WIDE_U8 0
#define VALET_TILE_NS avx2
#define VALET_DOT_U8I8(acc, u, s) \
  _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
#define VALET_DOT_I16(acc, a, b) _mm256_add_epi32((acc), _mm256_madd_epi16((a), (b)))
#include "kernels/x86/tiles.h"
#include "kernels/x86/tiles_k.h"

#else

#include "kernels/ref/scalar.h"

namespace valet::avx2 {
TileKernel GemmTile(GgmlType) { return {}; }
TileKernel GemvTile(GgmlType) { return {}; }
float DotF32(int64_t n, const void* x, const void* y) { return scalar::DotF32(n, x, y); }
float DotF16(int64_t n, const void* x, const void* y) { return scalar::DotF16(n, x, y); }
float DotBf16(int64_t n, const void* x, const void* y) { return scalar::DotBf16(n, x, y); }
float DotQ4_1(int64_t n, const void* x, const void* y) { return scalar::DotQ4_1(n, x, y); }
float DotQ5_0(int64_t n, const void* x, const void* y) { return scalar::DotQ5_0(n, x, y); }
float DotQ5_1(int64_t n, const void* x, const void* y) { return scalar::DotQ5_1(n, x, y); }
float DotIQ4_NL(int64_t n, const void* x, const void* y) { return scalar::DotIQ4_NL(n, x, y); }
float DotQ2_K(int64_t n, const void* x, const void* y) { return scalar::DotQ2_K(n, x, y); }
float DotQ3_K(int64_t n, const void* x, const void* y) { return scalar::DotQ3_K(n, x, y); }
float DotQ4_K(int64_t n, const void* x, const void* y) { return scalar::DotQ4_K(n, x, y); }
float DotQ5_K(int64_t n, const void* x, const void* y) { return scalar::DotQ5_K(n, x, y); }
float DotQ6_K(int64_t n, const void* x, const void* y) { return scalar::DotQ6_K(n, x, y); }
float DotIQ4_XS(int64_t n, const void* x, const void* y) { return scalar::DotIQ4_XS(n, x, y); }
}  // namespace valet::avx2

#endif
