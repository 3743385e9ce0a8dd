// NEON activations (kernels/activation.h), bit-exact with the reference: the
// same operations on 4 lanes (FMAXNM/FMINNM take the number when x is NaN,
// as the reference's clamp does).
#include "kernels/arm/neon.h"

#if VALET_NEON_COMPILED

#include <arm_neon.h>

#include "kernels/activation.h"
#include "kernels/ref/scalar.h"

namespace valet::neon {
namespace {

// 2^k for k in [-126, 127] per lane.
float32x4_t Pow2(int32x4_t k) {
  return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(k, vdupq_n_s32(127)), 23));
}

float32x4_t Exp(float32x4_t x) {
  float32x4_t xc = vmaxnmq_f32(x, vdupq_n_f32(kExpMin));
  xc = vminnmq_f32(xc, vdupq_n_f32(kExpMax));
  const float32x4_t n = vrndnq_f32(vmulq_n_f32(xc, kExpLog2e));
  float32x4_t r = vfmaq_f32(xc, n, vdupq_n_f32(-kExpLn2Hi));
  r = vfmaq_f32(r, n, vdupq_n_f32(-kExpLn2Lo));
  float32x4_t p = vdupq_n_f32(kExpPoly[7]);
  for (int k = 6; k >= 0; --k) p = vfmaq_f32(vdupq_n_f32(kExpPoly[k]), p, r);
  const int32x4_t ni = vcvtq_s32_f32(n);
  const int32x4_t n1 = vshrq_n_s32(ni, 1);
  return vmulq_f32(vmulq_f32(p, Pow2(n1)), Pow2(vsubq_s32(ni, n1)));
}

}  // namespace

void SwiGlu(int64_t n, float* gate, const float* up) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t g = vld1q_f32(gate + i);
    const float32x4_t silu = vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), Exp(vnegq_f32(g))));
    vst1q_f32(gate + i, vmulq_f32(silu, vld1q_f32(up + i)));
  }
  scalar::SwiGlu(n - i, gate + i, up + i);
}

}  // namespace valet::neon

#endif  // VALET_NEON_COMPILED
