// Element-wise activations behind the kernel table, with one exp shared by
// every variant so that their results agree bit for bit.
//
// e^x: n = round(x log2 e) (ties to even), r = x - n ln2 in two fused steps
// (Cody-Waite: ln2's float and the rest), e^r by its Taylor polynomial to
// r^7 (|r| <= ln2 / 2, truncation under 0.1 ulp) in Horner form with fused
// multiply-adds, then 2^n applied as two exact power-of-two factors so that
// every n of the clamped range is representable, +inf above ln(FLT_MAX) and 0
// far enough below ln(FLT_MIN); SiLU through it stays within a few ulps of
// double (kernels_activation_test measures it).
// x is first clamped to [kExpMin, kExpMax] (NaN to kExpMin: the callers'
// results are NaN anyway), so no variant converts an out-of-range float.
#pragma once

#include <cstdint>

namespace valet {

// gate[i] = silu(gate[i]) * up[i] for i < n, silu(g) = g / (1 + e^-g): SwiGLU.
using swiglu_fn = void (*)(int64_t n, float* gate, const float* up);

inline constexpr float kExpMin = -104.0f;  // e^-104 rounds to 0
inline constexpr float kExpMax = 89.0f;    // e^89 overflows to +inf
inline constexpr float kExpLog2e = 1.44269504088896340736f;
inline constexpr float kExpLn2Hi = 0.693147182464599609375f;    // float(ln 2)
inline constexpr float kExpLn2Lo = -1.904654299957768045e-09f;  // ln 2 - kExpLn2Hi
inline constexpr float kExpPoly[8] = {1.0f,         1.0f,          0.5f,          1.0f / 6.0f,
                                      1.0f / 24.0f, 1.0f / 120.0f, 1.0f / 720.0f, 1.0f / 5040.0f};

}  // namespace valet
