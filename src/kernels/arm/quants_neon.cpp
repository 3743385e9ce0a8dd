// The AArch64 NEON Q8_0 activation quantizer, bit-exact with the reference.
#include "kernels/arm/neon.h"

#if VALET_NEON_COMPILED

#include <arm_neon.h>

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"

namespace valet::neon {

void Q8_0FromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const float* x = src + i * kQK8_0;
    float32x4_t v[8];
    float32x4_t vmax = vdupq_n_f32(0.0f);
    for (int k = 0; k < 8; ++k) {
      v[k] = vld1q_f32(x + 4 * k);
      // maxnm ignores NaNs, as the reference's fmax does.
      vmax = vmaxnmq_f32(vmax, vabsq_f32(v[k]));
    }
    const float amax = vmaxnmvq_f32(vmax);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    b[i].d = Fp32ToFp16(d);
    const float32x4_t mul = vdupq_n_f32(id);
    for (int k = 0; k < 8; k += 2) {
      // vcvtn rounds to nearest, ties to even, like nearbyint in the default mode.
      const int32x4_t q0 = vcvtnq_s32_f32(vmulq_f32(v[k], mul));
      const int32x4_t q1 = vcvtnq_s32_f32(vmulq_f32(v[k + 1], mul));
      const int16x8_t q16 = vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1));
      vst1_s8(b[i].qs + 4 * k, vqmovn_s16(q16));
    }
  }
}

}  // namespace valet::neon

#endif  // VALET_NEON_COMPILED
