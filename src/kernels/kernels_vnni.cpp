// The tile kernels (tiles_x86.h, tiles_x86_k.h) with AVX-VNNI int8 products, and vec_dots
// that are their 1x1 tiles.
#include "kernels/kernels_vnni.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
#define VALET_TILE_WIDE_U8 1
#define VALET_TILE_NS vnni
#define VALET_DOT_U8I8(acc, u, s) _mm256_dpbusd_avx_epi32((acc), (u), (s))
#define VALET_DOT_I16(acc, a, b) _mm256_dpwssd_avx_epi32((acc), (a), (b))
#include "kernels/tiles_x86.h"
#include "kernels/tiles_x86_k.h"

namespace valet::vnni {

bool Compiled() { return true; }

float DotQ8_0(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmQ0<tiles::Q8_0Weights, 1, 1>>(n, x, y);
}
float DotQ4_0(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmQ0<tiles::Q4_0Weights, 1, 1>>(n, x, y);
}

}  // namespace valet::vnni
#pragma GCC pop_options

#else

namespace valet::vnni {
bool Compiled() { return false; }
float DotQ8_0(int64_t, const void*, const void*) { return 0.0f; }
float DotQ4_0(int64_t, const void*, const void*) { return 0.0f; }
float DotF32(int64_t, const void*, const void*) { return 0.0f; }
float DotF16(int64_t, const void*, const void*) { return 0.0f; }
float DotBf16(int64_t, const void*, const void*) { return 0.0f; }
float DotQ4_K(int64_t, const void*, const void*) { return 0.0f; }
float DotQ6_K(int64_t, const void*, const void*) { return 0.0f; }
float DotQ4_1(int64_t, const void*, const void*) { return 0.0f; }
float DotQ5_0(int64_t, const void*, const void*) { return 0.0f; }
float DotQ5_1(int64_t, const void*, const void*) { return 0.0f; }
float DotIQ4_NL(int64_t, const void*, const void*) { return 0.0f; }
float DotQ2_K(int64_t, const void*, const void*) { return 0.0f; }
float DotQ3_K(int64_t, const void*, const void*) { return 0.0f; }
float DotQ5_K(int64_t, const void*, const void*) { return 0.0f; }
float DotIQ4_XS(int64_t, const void*, const void*) { return 0.0f; }
TileKernel GemmTile(GgmlType) { return {}; }
TileKernel GemvTile(GgmlType) { return {}; }
}  // namespace valet::vnni

#endif
