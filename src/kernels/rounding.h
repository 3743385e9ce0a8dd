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

// One 32-element block by llama.cpp's x86 activation rule (Q8_0, and the
// quants of Q8_1): scale by 127/amax, round half to even. Returns the
// unrounded scale d; only the stored copy of it is fp16.
inline float QuantizeQ8Block(const float* x, int8_t* qs) {
  float amax = 0.0f;
  for (int j = 0; j < kQK8_0; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int j = 0; j < kQK8_0; ++j) qs[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
  return amax / 127.0f;
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
