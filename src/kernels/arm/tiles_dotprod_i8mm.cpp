// AArch64 NEON variants that need an architecture extension: SDOT
// (FEAT_DotProd, vdotq_s32) and SMMLA (FEAT_I8MM, vmmlaq_s32), for the Q8_0
// and Q4_0 weights. Each function carries its own target attribute, so the
// build stays armv8-a and the tables are offered only when the running CPU
// reports the feature (HWCAP_ASIMDDP, HWCAP2_I8MM).
//
// The integer dot products are exact, and every block's scale is applied as
// the reference does (float(isum) * (dx * dy), then one add per block in block
// order), so all of these equal the scalar reference bit for bit.
#include "kernels/arm/neon.h"

#if VALET_NEON_COMPILED

#include <arm_neon.h>
#if defined(__linux__)
#include <sys/auxv.h>
#endif

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"

#define VALET_TARGET_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#define VALET_TARGET_I8MM __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))

namespace valet::neon {
namespace {

// The Linux HWCAP bits (asm/hwcap.h), spelled out so older headers work too.
constexpr unsigned long kHwcapAsimdDp = 1UL << 20;
constexpr unsigned long kHwcap2I8mm = 1UL << 13;

// One 32-element block as int8 lanes: elements 0..15 and 16..31.
struct BlockLanes {
  int8x16_t lo, hi;
};

inline BlockLanes LoadQ8_0(const BlockQ8_0& b) { return {vld1q_s8(b.qs), vld1q_s8(b.qs + 16)}; }

inline BlockLanes LoadQ4_0(const BlockQ4_0& b) {
  const uint8x16_t raw = vld1q_u8(b.qs);
  // Low nibbles are elements 0..15, high nibbles 16..31; both offset by 8.
  const int8x16_t eight = vdupq_n_s8(8);
  return {vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0x0f))), eight),
          vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), eight)};
}

template <typename W>
using LoadFn = BlockLanes (*)(const W&);

template <typename T>
const T& BlockAt(const void* row, size_t stride, int k, int64_t i) {
  return reinterpret_cast<const T*>(static_cast<const uint8_t*>(row) + k * stride)[i];
}

VALET_TARGET_DOTPROD inline int32_t BlockDot(const BlockLanes& w, const BlockLanes& q) {
  return vaddvq_s32(vdotq_s32(vdotq_s32(vdupq_n_s32(0), w.lo, q.lo), w.hi, q.hi));
}

// R weight rows by C activation rows with SDOT; R = C = 1 is vec_dot.
template <typename W, LoadFn<W> Load, int R, int C>
VALET_TARGET_DOTPROD void TileDotprod(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy,
                                      float* out, int64_t ldo) {
  float sum[R][C] = {};
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    BlockLanes q[C];
    float dy[C];
    for (int c = 0; c < C; ++c) {
      const auto& b = BlockAt<BlockQ8_0>(y, ldy, c, i);
      q[c] = LoadQ8_0(b);
      dy[c] = Fp16ToFp32(b.d);
    }
    for (int r = 0; r < R; ++r) {
      const auto& a = BlockAt<W>(x, ldx, r, i);
      const BlockLanes w = Load(a);
      const float dx = Fp16ToFp32(a.d);
      for (int c = 0; c < C; ++c) sum[r][c] += static_cast<float>(BlockDot(w, q[c])) * (dx * dy[c]);
    }
  }
  for (int c = 0; c < C; ++c) {
    for (int r = 0; r < R; ++r) out[c * ldo + r] = sum[r][c];
  }
}

template <typename W, LoadFn<W> Load>
VALET_TARGET_DOTPROD float DotDotprod(int64_t n, const void* x, const void* y) {
  float out = 0.0f;
  TileDotprod<W, Load, 1, 1>(n, x, 0, y, 0, &out, 1);
  return out;
}

// 8-byte halves of two rows side by side, the 2x8 operand SMMLA takes:
// part k holds elements 8k..8k+7 of row a, then of row b.
struct PairLanes {
  int8x16_t part[4];
};

inline PairLanes Interleave(const BlockLanes& a, const BlockLanes& b) {
  auto zip1 = [](int8x16_t p, int8x16_t q) {
    return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(p), vreinterpretq_s64_s8(q)));
  };
  auto zip2 = [](int8x16_t p, int8x16_t q) {
    return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(p), vreinterpretq_s64_s8(q)));
  };
  return {{zip1(a.lo, b.lo), zip2(a.lo, b.lo), zip1(a.hi, b.hi), zip2(a.hi, b.hi)}};
}

// (2 * RP) weight rows by (2 * CP) activation rows with SMMLA: each 2x2 pair of
// pairs gets its four block dots {r0c0, r0c1, r1c0, r1c1} in one vector.
template <typename W, LoadFn<W> Load, int RP, int CP>
VALET_TARGET_I8MM void TileI8mm(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out,
                                int64_t ldo) {
  float32x4_t sum[RP][CP];
  for (auto& row : sum) {
    for (float32x4_t& s : row) s = vdupq_n_f32(0.0f);
  }
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    PairLanes q[CP];
    float32x4_t dy[CP];  // {dy0, dy1, dy0, dy1}
    for (int c = 0; c < CP; ++c) {
      const auto& b0 = BlockAt<BlockQ8_0>(y, ldy, 2 * c, i);
      const auto& b1 = BlockAt<BlockQ8_0>(y, ldy, 2 * c + 1, i);
      q[c] = Interleave(LoadQ8_0(b0), LoadQ8_0(b1));
      const float d0 = Fp16ToFp32(b0.d), d1 = Fp16ToFp32(b1.d);
      dy[c] = float32x4_t{d0, d1, d0, d1};
    }
    for (int r = 0; r < RP; ++r) {
      const auto& a0 = BlockAt<W>(x, ldx, 2 * r, i);
      const auto& a1 = BlockAt<W>(x, ldx, 2 * r + 1, i);
      const PairLanes w = Interleave(Load(a0), Load(a1));
      const float d0 = Fp16ToFp32(a0.d), d1 = Fp16ToFp32(a1.d);
      const float32x4_t dx = {d0, d0, d1, d1};
      for (int c = 0; c < CP; ++c) {
        int32x4_t acc = vdupq_n_s32(0);
        for (int k = 0; k < 4; ++k) acc = vmmlaq_s32(acc, w.part[k], q[c].part[k]);
        // Separate multiply and add (no FMA), as the reference rounds.
        sum[r][c] = vaddq_f32(sum[r][c], vmulq_f32(vcvtq_f32_s32(acc), vmulq_f32(dx, dy[c])));
      }
    }
  }
  for (int r = 0; r < RP; ++r) {
    for (int c = 0; c < CP; ++c) {
      float* o = out + 2 * c * ldo + 2 * r;
      o[0] = vgetq_lane_f32(sum[r][c], 0);
      o[ldo] = vgetq_lane_f32(sum[r][c], 1);
      o[1] = vgetq_lane_f32(sum[r][c], 2);
      o[ldo + 1] = vgetq_lane_f32(sum[r][c], 3);
    }
  }
}

}  // namespace

bool CpuHasDotprod() {
#if defined(__linux__)
  return (getauxval(AT_HWCAP) & kHwcapAsimdDp) != 0;
#else
  return false;
#endif
}

bool CpuHasI8mm() {
#if defined(__linux__)
  return CpuHasDotprod() && (getauxval(AT_HWCAP2) & kHwcap2I8mm) != 0;
#else
  return false;
#endif
}

vec_dot_fn DotprodVecDot(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0:
      return DotDotprod<BlockQ8_0, LoadQ8_0>;
    case GgmlType::kQ4_0:
      return DotDotprod<BlockQ4_0, LoadQ4_0>;
    default:
      return nullptr;
  }
}

TileKernel DotprodTile(GgmlType type, int cols) {
  if (type == GgmlType::kQ8_0) {
    if (cols == 1) return {TileDotprod<BlockQ8_0, LoadQ8_0, 4, 1>, 4, 1};
    return {TileDotprod<BlockQ8_0, LoadQ8_0, 4, 2>, 4, 2};
  }
  if (type == GgmlType::kQ4_0) {
    if (cols == 1) return {TileDotprod<BlockQ4_0, LoadQ4_0, 4, 1>, 4, 1};
    return {TileDotprod<BlockQ4_0, LoadQ4_0, 4, 2>, 4, 2};
  }
  return {};
}

TileKernel I8mmGemmTile(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0:
      return {TileI8mm<BlockQ8_0, LoadQ8_0, 2, 2>, 4, 4};
    case GgmlType::kQ4_0:
      return {TileI8mm<BlockQ4_0, LoadQ4_0, 2, 2>, 4, 4};
    default:
      return {};
  }
}

}  // namespace valet::neon

#endif  // VALET_NEON_COMPILED
