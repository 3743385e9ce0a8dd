// The tile kernels (tiles.h, tiles_k.h) with AVX-VNNI int8 products.
#include "kernels/x86/vnni.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define VALET_TILE_TARGET "avx2,fma,f16c,avxvnni"
#define VALET_TILE_WIDE_U8 1
#define VALET_TILE_NS vnni
#define VALET_DOT_U8I8(acc, u, s) _mm256_dpbusd_avx_epi32((acc), (u), (s))
#define VALET_DOT_I16(acc, a, b) _mm256_dpwssd_avx_epi32((acc), (a), (b))
#include "kernels/x86/tiles.h"
#include "kernels/x86/tiles_k.h"
#include "kernels/x86/vnni_patch.h"

#else

namespace valet::vnni {
void Patch(KernelTable&) {}
}  // namespace valet::vnni

#endif
