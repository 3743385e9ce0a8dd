// NEON row-group kernels. A 16-byte load of a 32-byte chunk holds 4 quants of
// 4 rows (rows 0..3 or 4..7 of the group), so one SDOT with 4 activations
// broadcast from a lane (vdotq_laneq_s32) yields those 4 rows' partial dots
// in its 4 int32 lanes, and a block's float update of 8 outputs is two
// multiply-adds per token. Without FEAT_DotProd the same step is SMULL +
// pairwise adds. The kernels are written once over that step (packed_neon.h)
// and compiled twice: plain armv8-a, and under the dotprod target for the
// neon_dotprod table, which is offered only when the CPU reports SDOT. The
// neon_i8mm table adds SMMLA prefill GEMMs (packed_i8mm.cpp).
//
// Integer dots are exact; each block's scale product and multiply-add follow
// the scalar reference (ref/packed.cpp), so every variant equals it bit for
// bit.
#include "kernels/packed_kernels.h"

#include "kernels/arm/neon.h"

#if VALET_NEON_COMPILED

#include <arm_neon.h>

#include "kernels/arm/packed_neon.h"
#include "kernels/packed_blocks.h"
#include "kernels/simd_target.h"

namespace valet::neon {

namespace plain {
namespace {

// Pair sums, SADALP folding each SMULL in: lane 2i + k of lo holds the sum of
// row i's products 2k and 2k + 1 for rows 0..1, of hi for rows 2..3; one
// pairwise add at the end of a dot makes the 4 rows' sums.
struct Step {
  struct DotAcc {
    int32x4_t lo, hi;
  };

  static DotAcc DotZero() { return {vdupq_n_s32(0), vdupq_n_s32(0)}; }

  template <int L>
  static DotAcc Dot(DotAcc acc, int8x16_t w, int8x16_t a) {
    const int8x16_t b = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(a), L));
    return {vpadalq_s16(acc.lo, vmull_s8(vget_low_s8(w), vget_low_s8(b))),
            vpadalq_s16(acc.hi, vmull_high_s8(w, b))};
  }

  static int32x4_t DotSum(DotAcc acc) { return vpaddq_s32(acc.lo, acc.hi); }
};

}  // namespace
}  // namespace plain

VALET_TARGET_BEGIN("arch=armv8.2-a+dotprod")

namespace sdot {
namespace {

struct Step {
  using DotAcc = int32x4_t;

  static DotAcc DotZero() { return vdupq_n_s32(0); }

  template <int L>
  static DotAcc Dot(DotAcc acc, int8x16_t w, int8x16_t a) {
    return vdotq_laneq_s32(acc, w, a, L);
  }

  static int32x4_t DotSum(DotAcc acc) { return acc; }
};

// The kernels compiled for dotprod: each inlines the shared kernel and, with
// it, Step (flatten, so that GCC's heuristics cannot leave SDOT out of line).
struct Entries {
  template <class Packed, int C>
  [[gnu::flatten]] static void GemmSmallx8(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy,
                                           float* out, int64_t ldo) {
    rowgroup::Gemms<Step>::template GemmSmallx8<Packed, C>(n, x, ldx, y, ldy, out, ldo);
  }
  template <class Packed, int C>
  [[gnu::flatten]] static void GemmQ4Q5_Kx8(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy,
                                            float* out, int64_t ldo) {
    rowgroup::Gemms<Step>::template GemmQ4Q5_Kx8<Packed, C>(n, x, ldx, y, ldy, out, ldo);
  }
  template <int C>
  [[gnu::flatten]] static void GemmIQ4_XSx8(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy,
                                            float* out, int64_t ldo) {
    rowgroup::Gemms<Step>::template GemmIQ4_XSx8<C>(n, x, ldx, y, ldy, out, ldo);
  }
  template <int C>
  [[gnu::flatten]] static void GemmQ2_Kx8(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy,
                                          float* out, int64_t ldo) {
    rowgroup::Gemms<Step>::template GemmQ2_Kx8<C>(n, x, ldx, y, ldy, out, ldo);
  }
  template <class Packed, int C>
  [[gnu::flatten]] static void GemmQ3Q6_Kx8(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy,
                                            float* out, int64_t ldo) {
    rowgroup::Gemms<Step>::template GemmQ3Q6_Kx8<Packed, C>(n, x, ldx, y, ldy, out, ldo);
  }
};

}  // namespace
}  // namespace sdot

VALET_TARGET_END()

// Plain armv8-a is the baseline the shared kernels compile for: they are its
// entry points as they are.
TileKernel PackedTile(GgmlType type, int cols) {
  return rowgroup::Make<rowgroup::Gemms<plain::Step>>(type, cols);
}
TileKernel DotprodPackedTile(GgmlType type, int cols) { return rowgroup::Make<sdot::Entries>(type, cols); }

}  // namespace valet::neon

#else

namespace valet::neon {
TileKernel PackedTile(GgmlType, int) { return {}; }
TileKernel DotprodPackedTile(GgmlType, int) { return {}; }
}  // namespace valet::neon

#endif
