// AArch64 NEON dot products, and the tiles that loop them per pair.
//
// The 32-element block types compute each block's integer dot product in
// vector lanes, reduce it across lanes (one instruction on AArch64), and then
// apply the scales exactly as the reference does, so they are bit-exact with
// it. The float types accumulate in f32 lanes with fused multiply-adds and
// agree with the reference (which sums in double) to rounding only.
#include "kernels/arm/neon.h"

#if VALET_NEON_COMPILED

#include <arm_neon.h>

#include "kernels/fp16.h"
#include "kernels/pair_tile.h"
#include "kernels/quant_blocks.h"
#include "kernels/ref/scalar.h"

namespace valet::neon {
namespace {

// Sum of x[k] * y[k] over 16 int8 lanes, accumulated into 4 int32 lanes, in
// base armv8-a (SDOT is a separate table, tiles_dotprod_i8mm.cpp).
inline int32x4_t DotI8(int32x4_t acc, int8x16_t x, int8x16_t y) {
  // int8 x int8 fits in int16 (|p| <= 2^14), and pairwise widening adds keep it exact.
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(x), vget_low_s8(y)));
  return vpadalq_s16(acc, vmull_high_s8(x, y));
}

inline float BlockScale(uint16_t a, uint16_t b) { return Fp16ToFp32(a) * Fp16ToFp32(b); }

// f16 lanes widened to f32: exact, and no fp16 arithmetic extension needed.
inline float32x4_t LoadF16Low(const uint16_t* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

inline float32x4_t LoadBf16(const uint16_t* p) {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

using LoadFn = float32x4_t (*)(const uint16_t*);

// Four independent accumulators hide the FMA latency; the tail goes through
// the scalar conversion so any n works.
template <LoadFn Load, float (*Widen)(uint16_t)>
float DotHalf(int64_t n, const uint16_t* a, const uint16_t* b) {
  float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 4; ++k)
      acc[k] = vfmaq_f32(acc[k], Load(a + i + 4 * k), Load(b + i + 4 * k));
  }
  for (; i + 4 <= n; i += 4) acc[0] = vfmaq_f32(acc[0], Load(a + i), Load(b + i));
  float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
  for (; i < n; ++i) sum += Widen(a[i]) * Widen(b[i]);
  return sum;
}

}  // namespace

float DotF32(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const float*>(x);
  const auto* b = static_cast<const float*>(y);
  float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 4; ++k) {
      acc[k] = vfmaq_f32(acc[k], vld1q_f32(a + i + 4 * k), vld1q_f32(b + i + 4 * k));
    }
  }
  for (; i + 4 <= n; i += 4) acc[0] = vfmaq_f32(acc[0], vld1q_f32(a + i), vld1q_f32(b + i));
  float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

float DotF16(int64_t n, const void* x, const void* y) {
  return DotHalf<LoadF16Low, Fp16ToFp32>(n, static_cast<const uint16_t*>(x),
                                         static_cast<const uint16_t*>(y));
}

float DotBf16(int64_t n, const void* x, const void* y) {
  return DotHalf<LoadBf16, Bf16ToFp32>(n, static_cast<const uint16_t*>(x),
                                       static_cast<const uint16_t*>(y));
}

float DotQ8_0(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ8_0*>(x);
  const auto* b = static_cast<const BlockQ8_0*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    int32x4_t acc = vdupq_n_s32(0);
    acc = DotI8(acc, vld1q_s8(a[i].qs), vld1q_s8(b[i].qs));
    acc = DotI8(acc, vld1q_s8(a[i].qs + 16), vld1q_s8(b[i].qs + 16));
    sum += static_cast<float>(vaddvq_s32(acc)) * BlockScale(a[i].d, b[i].d);
  }
  return sum;
}

float DotQ4_0(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ4_0*>(x);
  const auto* b = static_cast<const BlockQ8_0*>(y);
  const uint8x16_t low4 = vdupq_n_u8(0x0f);
  const int8x16_t eight = vdupq_n_s8(8);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const uint8x16_t raw = vld1q_u8(a[i].qs);
    // Low nibbles are elements 0..15, high nibbles 16..31; both offset by 8.
    const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, low4)), eight);
    const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), eight);
    int32x4_t acc = vdupq_n_s32(0);
    acc = DotI8(acc, lo, vld1q_s8(b[i].qs));
    acc = DotI8(acc, hi, vld1q_s8(b[i].qs + 16));
    sum += static_cast<float>(vaddvq_s32(acc)) * BlockScale(a[i].d, b[i].d);
  }
  return sum;
}

namespace {

TileKernel TileFor(GgmlType type, int cols) {
  switch (type) {
    case GgmlType::kF32:
      return PairTile<DotF32, 4>(cols);
    case GgmlType::kF16:
      return PairTile<DotF16, 4>(cols);
    case GgmlType::kBF16:
      return PairTile<DotBf16, 4>(cols);
    case GgmlType::kQ8_0:
      return PairTile<DotQ8_0, 4>(cols);
    case GgmlType::kQ4_0:
      return PairTile<DotQ4_0, 4>(cols);
    case GgmlType::kQ4_K:
      return PairTile<scalar::DotQ4_K, 4>(cols);
    case GgmlType::kQ6_K:
      return PairTile<scalar::DotQ6_K, 4>(cols);
    case GgmlType::kQ4_1:
      return PairTile<scalar::DotQ4_1, 4>(cols);
    case GgmlType::kQ5_0:
      return PairTile<scalar::DotQ5_0, 4>(cols);
    case GgmlType::kQ5_1:
      return PairTile<scalar::DotQ5_1, 4>(cols);
    case GgmlType::kIQ4_NL:
      return PairTile<scalar::DotIQ4_NL, 4>(cols);
    case GgmlType::kQ2_K:
      return PairTile<scalar::DotQ2_K, 4>(cols);
    case GgmlType::kQ3_K:
      return PairTile<scalar::DotQ3_K, 4>(cols);
    case GgmlType::kQ5_K:
      return PairTile<scalar::DotQ5_K, 4>(cols);
    case GgmlType::kIQ4_XS:
      return PairTile<scalar::DotIQ4_XS, 4>(cols);
    default:
      return {};
  }
}

}  // namespace

TileKernel GemmTile(GgmlType type) { return TileFor(type, 2); }
TileKernel GemvTile(GgmlType type) { return TileFor(type, 1); }

}  // namespace valet::neon

#endif  // VALET_NEON_COMPILED
