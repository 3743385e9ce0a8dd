// Scalar conversions between f32 and the 16-bit float formats GGUF stores.
//
// Both are bit-exact with what the hardware (F16C) and ggml produce: IEEE
// binary16 with round-to-nearest-even, and bfloat16 rounded to nearest-even
// with NaNs kept NaN (quiet bit forced) rather than rounded into infinity.
// Row conversions that may use SIMD are in the kernel table (F16/BF16 entries).
#pragma once

#include <bit>
#include <cstdint>

namespace valet {

inline float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    // F16C quiets signalling NaNs on the way up; so do we.
    bits = sign | 0x7f800000u | (mant << 13) | (mant != 0 ? 0x00400000u : 0u);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else {
    // Zero or subnormal (mant * 2^-24): exact in f32.
    bits = sign | std::bit_cast<uint32_t>(static_cast<float>(mant) * 0x1p-24f);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t Fp32ToFp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) {  // NaN: quiet, keep the top of the payload
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax >= 0x38800000u) {  // normal in half: rebias exponent 127 -> 15, round the 13 dropped bits
    uint32_t r = ax - (112u << 23);
    r += 0xfffu + ((r >> 13) & 1u);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  // Half subnormal or zero: count units of 2^-24; adding 2^23 rounds to an
  // integer with the FPU's nearest-even (a carry into 1024 yields the smallest normal).
  const float units = std::bit_cast<float>(ax) * 0x1p24f;
  const float rounded = (units + 0x1p23f) - 0x1p23f;
  return static_cast<uint16_t>(sign | static_cast<uint16_t>(rounded));
}

inline float Bf16ToFp32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline uint16_t Fp32ToBf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace valet
