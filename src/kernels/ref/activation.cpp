// The reference activations (kernels/activation.h): each operation written
// out as the SIMD variants perform it, std::fma for their fused steps.
#include <bit>
#include <cmath>

#include "kernels/activation.h"
#include "kernels/ref/scalar.h"

namespace valet::scalar {
namespace {

// 2^k for k in [-126, 127], exactly.
float Pow2(int32_t k) { return std::bit_cast<float>(static_cast<uint32_t>(k + 127) << 23); }

float Exp(float x) {
  float xc = x > kExpMin ? x : kExpMin;  // NaN -> kExpMin, as maxps(x, min)
  xc = xc < kExpMax ? xc : kExpMax;
  const float n = std::nearbyint(xc * kExpLog2e);
  float r = std::fma(n, -kExpLn2Hi, xc);
  r = std::fma(n, -kExpLn2Lo, r);
  float p = kExpPoly[7];
  for (int k = 6; k >= 0; --k) p = std::fma(p, r, kExpPoly[k]);
  const auto ni = static_cast<int32_t>(n);
  const int32_t n1 = ni >> 1;  // floor(n / 2): both halves in [-75, 65]
  return (p * Pow2(n1)) * Pow2(ni - n1);
}

}  // namespace

void SwiGlu(int64_t n, float* gate, const float* up) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = (g / (1.0f + Exp(-g))) * up[i];
  }
}

}  // namespace valet::scalar
