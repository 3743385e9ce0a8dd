// The AArch64 int8 peak loops: SMLAL (int8 products widened into int16, the
// base table's step), SDOT (FEAT_DotProd) and SMMLA (FEAT_I8MM). Each
// instruction is issued from independent accumulator chains, so the loop
// measures throughput, not latency.
#include "kernels/arm/neon.h"
#include "kernels/int8_peak_loops.h"

#if VALET_NEON_COMPILED
#include <arm_neon.h>

#include "kernels/simd_target.h"

namespace valet::int8_peak {
namespace {

// SDOT/SMMLA latency (2-4 cycles) times throughput (up to 4 per cycle on
// Neoverse V2) is at most 16 in flight; 12 chains plus a and w leave room in
// the 32 vector registers.
constexpr int kChains = 12;

uint32_t Lanes(int32x4_t v) { return static_cast<uint32_t>(vaddvq_s32(v)); }

// 8 s8 x s8 products added into 8 int16 lanes per SMLAL. The compiler sees
// SMLAL as a multiply and an add, so each chain has its own weights and a is
// "changed" by an empty asm every iteration: otherwise the product would be
// computed once, outside the loop.
uint32_t NeonSmlal(int64_t iterations, const uint8_t* seed) {
  int8x8_t a = vld1_s8(reinterpret_cast<const int8_t*>(seed));
  int8x8_t w[kChains];
  int16x8_t acc[kChains];
  for (int k = 0; k < kChains; ++k) {
    w[k] = vld1_s8(reinterpret_cast<const int8_t*>(seed + 8 * (k + 1)));
    acc[k] = vdupq_n_s16(0);
  }
  for (int64_t i = 0; i < iterations; ++i) {
    __asm__ volatile("" : "+w"(a));
    for (int k = 0; k < kChains; ++k) acc[k] = vmlal_s8(acc[k], a, w[k]);
  }
  int32x4_t s = vdupq_n_s32(0);
  for (const int16x8_t& v : acc) s = vpadalq_s16(s, v);
  return Lanes(s);
}

}  // namespace
}  // namespace valet::int8_peak

VALET_TARGET_BEGIN("arch=armv8.2-a+dotprod")
namespace valet::int8_peak {
namespace {

// 16 s8 x s8 products into 4 int32 lanes per SDOT.
uint32_t NeonSdot(int64_t iterations, const uint8_t* seed) {
  const int8x16_t a = vld1q_s8(reinterpret_cast<const int8_t*>(seed));
  const int8x16_t w = vld1q_s8(reinterpret_cast<const int8_t*>(seed + 16));
  int32x4_t acc[kChains];
  for (int32x4_t& v : acc) v = vdupq_n_s32(0);
  for (int64_t i = 0; i < iterations; ++i) {
    for (int32x4_t& v : acc) v = vdotq_s32(v, a, w);
  }
  int32x4_t s = acc[0];
  for (int k = 1; k < kChains; ++k) s = vaddq_s32(s, acc[k]);
  return Lanes(s);
}

}  // namespace
}  // namespace valet::int8_peak
VALET_TARGET_END()

VALET_TARGET_BEGIN("arch=armv8.2-a+dotprod+i8mm")
namespace valet::int8_peak {
namespace {

// A 2x8 by 8x2 int8 product, 32 multiply-adds, into 2x2 int32 per SMMLA.
uint32_t NeonSmmla(int64_t iterations, const uint8_t* seed) {
  const int8x16_t a = vld1q_s8(reinterpret_cast<const int8_t*>(seed));
  const int8x16_t w = vld1q_s8(reinterpret_cast<const int8_t*>(seed + 16));
  int32x4_t acc[kChains];
  for (int32x4_t& v : acc) v = vdupq_n_s32(0);
  for (int64_t i = 0; i < iterations; ++i) {
    for (int32x4_t& v : acc) v = vmmlaq_s32(v, a, w);
  }
  int32x4_t s = acc[0];
  for (int k = 1; k < kChains; ++k) s = vaddq_s32(s, acc[k]);
  return Lanes(s);
}

}  // namespace
}  // namespace valet::int8_peak
VALET_TARGET_END()

namespace valet::int8_peak {

PeakLoop NeonLoop(std::string_view table) {
  if (table == "neon") return {"smlal (int16 sums)", int64_t{kChains} * 8, NeonSmlal};
  if (table == "neon_dotprod") return {"sdot", int64_t{kChains} * 16, NeonSdot};
  if (table == "neon_i8mm") return {"smmla", int64_t{kChains} * 32, NeonSmmla};
  return {};
}

}  // namespace valet::int8_peak

#else

namespace valet::int8_peak {
PeakLoop NeonLoop(std::string_view) { return {}; }
}  // namespace valet::int8_peak

#endif
