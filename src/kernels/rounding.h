// Internal: the rounding and block-statistics helpers the scalar reference and
// the SIMD variants must agree on bit for bit.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/quant_blocks.h"

namespace valet {

// Nearest integer, ties to even, for |v| < 2^22: adding 1.5 * 2^23 pins the
// exponent so the rounded integer lands in the low mantissa bits.
inline int NearestInt(float v) {
  const float t = v + 12582912.0f;
  return std::bit_cast<int32_t>(t) - 0x4b400000;
}

// Nearest integer, ties away from zero (C's roundf), for |v| < 2^22.
inline int RoundHalfAway(float v) {
  const float t = std::trunc(v);
  const int ti = static_cast<int>(t);
  if (std::fabs(v - t) >= 0.5f) return v < 0.0f ? ti - 1 : ti + 1;
  return ti;
}

// The element of largest magnitude, keeping its sign; the first wins a tie.
inline float SignedAbsMax(const float* x, int n) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  return max;
}

inline void FillQ8KBsums(BlockQ8_K* b) {
  for (int g = 0; g < kQK_K / 16; ++g) {
    int sum = 0;
    for (int j = 0; j < 16; ++j) sum += b->qs[g * 16 + j];
    b->bsums[g] = static_cast<int16_t>(sum);
  }
}

}  // namespace valet
