// Reference conversions for the float types, the 32-element block types and
// the Q8_K activation type. The activation quantizers follow llama.cpp's
// reference quantizers step by step, because the engine's numerics must match
// llama.cpp's (the weights' dot products see exactly these quants).
#include <cmath>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"
#include "kernels/ref/scalar.h"
#include "kernels/rounding.h"

namespace valet::scalar {

void F32ToFloat(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void F32FromFloat(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void F16ToFloat(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = Fp16ToFp32(h[i]);
}

void F16FromFloat(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = Fp32ToFp16(src[i]);
}

void Bf16ToFloat(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToFp32(h[i]);
}

void Bf16FromFloat(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = Fp32ToBf16(src[i]);
}

void Q8_0ToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    for (int j = 0; j < kQK8_0; ++j) dst[i * kQK8_0 + j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void Q8_0FromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  // As llama.cpp's x86 quantizer (the one its reference outputs came from).
  for (int64_t i = 0; i < n / kQK8_0; ++i) b[i].d = Fp32ToFp16(QuantizeQ8Block(src + i * kQK8_0, b[i].qs));
}

void Q4_0ToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    float* y = dst + i * kQK4_0;
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[j] = static_cast<float>((b[i].qs[j] & 0x0f) - 8) * d;
      y[j + kQK4_0 / 2] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void Q4_0FromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float* x = src + i * kQK4_0;
    // The signed value of largest magnitude maps to -8, using the full 16 levels
    // on that side.
    const float max = SignedAbsMax(x, kQK4_0);
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = Fp32ToFp16(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
      const int hi = std::min(15, static_cast<int>(x[j + kQK4_0 / 2] * id + 8.5f));
      b[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void Q8_KToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    for (int j = 0; j < kQK_K; ++j) dst[i * kQK_K + j] = b[i].d * static_cast<float>(b[i].qs[j]);
  }
}

void Q8_KFromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    const float max = SignedAbsMax(x, kQK_K);
    if (max == 0.0f) {
      std::memset(&b[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      b[i].qs[j] = static_cast<int8_t>(std::min(127, NearestInt(iscale * x[j])));
    }
    FillQ8KBsums(&b[i]);
    b[i].d = 1.0f / iscale;
  }
}

}  // namespace valet::scalar
