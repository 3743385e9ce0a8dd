// NEON row-group kernels. A 16-byte load of a 32-byte chunk holds 4 quants of
// 4 rows (rows 0..3 or 4..7 of the group), so one SDOT with 4 activations
// broadcast from a lane (vdotq_laneq_s32) yields those 4 rows' partial dots
// in its 4 int32 lanes, and a block's float update of 8 outputs is two
// multiply-adds per token. Without FEAT_DotProd the same step is SMULL +
// pairwise adds. The kernels are written once (packed_neon_body.inc) and
// compiled twice: plain armv8-a, and under the dotprod target for the
// neon_dotprod table, which is offered only when the CPU reports SDOT.
//
// Integer dots are exact; each block's scale product and multiply-add follow
// the scalar reference (packed_scalar.cpp), so every variant equals it bit for
// bit.
#include "kernels/packed_kernels.h"

#include "kernels/kernels_neon.h"

#if VALET_NEON_COMPILED

#include <arm_neon.h>

#include <type_traits>

#include "kernels/packed_blocks.h"
#include "kernels/prefetch.h"

namespace valet::neon {
namespace {

// f16 lanes widened to f32: exact, as Fp16ToFp32.
inline float32x4_t LoadF16(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

// Decode streams one row group per call: as on AVX2 (packed_avx2.cpp), every
// cache line of the bytes 2 KiB ahead (kernels/prefetch.h).
template <size_t Bytes>
inline void PrefetchAhead(const void* block) {
  PrefetchBlockAhead<Bytes, 2048>(block);
}

}  // namespace

namespace plain {
namespace {

// Pair sums, SADALP folding each SMULL in: lane 2i + k of lo holds the sum of
// row i's products 2k and 2k + 1 for rows 0..1, of hi for rows 2..3; one
// pairwise add at the end of a dot makes the 4 rows' sums.
struct DotAcc {
  int32x4_t lo, hi;
};

inline DotAcc DotZero() { return {vdupq_n_s32(0), vdupq_n_s32(0)}; }

template <int L>
inline DotAcc Dot(DotAcc acc, int8x16_t w, int8x16_t a) {
  const int8x16_t b = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(a), L));
  return {vpadalq_s16(acc.lo, vmull_s8(vget_low_s8(w), vget_low_s8(b))),
          vpadalq_s16(acc.hi, vmull_high_s8(w, b))};
}

inline int32x4_t DotSum(DotAcc acc) { return vpaddq_s32(acc.lo, acc.hi); }

#include "kernels/packed_neon_body.inc"

}  // namespace
}  // namespace plain

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

namespace sdot {
namespace {

using DotAcc = int32x4_t;

inline DotAcc DotZero() { return vdupq_n_s32(0); }

template <int L>
inline DotAcc Dot(DotAcc acc, int8x16_t w, int8x16_t a) {
  return vdotq_laneq_s32(acc, w, a, L);
}

inline int32x4_t DotSum(DotAcc acc) { return acc; }

#include "kernels/packed_neon_body.inc"

}  // namespace
}  // namespace sdot

#pragma GCC pop_options

TileKernel PackedTile(GgmlType type, int cols) { return plain::Make(type, cols); }
TileKernel DotprodPackedTile(GgmlType type, int cols) { return sdot::Make(type, cols); }

}  // namespace valet::neon

#else

namespace valet::neon {
TileKernel PackedTile(GgmlType, int) { return {}; }
TileKernel DotprodPackedTile(GgmlType, int) { return {}; }
}  // namespace valet::neon

#endif
