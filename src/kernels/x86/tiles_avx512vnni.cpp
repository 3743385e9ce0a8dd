// The tile kernels (tiles.h, tiles_k.h) with AVX-512 VNNI int8
// products on 256-bit vectors (AVX512VL): the CPUs with AVX-512 VNNI but not
// AVX-VNNI (Ice Lake, Zen 4) get the VNNI tiles too.
#include "kernels/x86/vnni.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define VALET_TILE_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"
#define VALET_TILE_WIDE_U8 1
#define VALET_TILE_NS avx512vnni
#define VALET_DOT_U8I8(acc, u, s) _mm256_dpbusd_epi32((acc), (u), (s))
#define VALET_DOT_I16(acc, a, b) _mm256_dpwssd_epi32((acc), (a), (b))
#include "kernels/x86/tiles.h"
#include "kernels/x86/tiles_k.h"
#include "kernels/x86/vnni_patch.h"

#else

namespace valet::avx512vnni {
void Patch(KernelTable&) {}
}  // namespace valet::avx512vnni

#endif
