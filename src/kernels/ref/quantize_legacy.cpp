// Reference conversions for the other 32-element block types: Q4_1, Q5_0,
// Q5_1, IQ4_NL, and the Q8_1 activation type. Q8_1 follows llama.cpp's x86
// quantizer step by step (the weights' dot products see exactly these quants);
// the weight quantizers are valet's own (they feed tests and synth-model).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_fit.h"
#include "kernels/ref/scalar.h"
#include "kernels/rounding.h"

namespace valet::scalar {
namespace {

constexpr int kHalf = kQK4_0 / 2;

// Element j (< 16) in the low nibble of byte j, element j + 16 in its high nibble.
void PackNibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < kHalf; ++j)
    qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | ((q[j + kHalf] & 0x0f) << 4));
}

void UnpackNibbles(const uint8_t* qs, uint8_t* q) {
  for (int j = 0; j < kHalf; ++j) {
    q[j] = qs[j] & 0x0f;
    q[j + kHalf] = qs[j] >> 4;
  }
}

// 5-bit quants: nibbles plus bit j of qh (little-endian) as the fifth bit of element j.
void Pack5(const uint8_t* q, uint8_t* qs, uint8_t* qh) {
  PackNibbles(q, qs);
  uint32_t h = 0;
  for (int j = 0; j < kQK4_0; ++j) h |= static_cast<uint32_t>(q[j] >> 4) << j;
  std::memcpy(qh, &h, sizeof(h));
}

void Unpack5(const uint8_t* qs, const uint8_t* qh, uint8_t* q) {
  UnpackNibbles(qs, q);
  uint32_t h;
  std::memcpy(&h, qh, sizeof(h));
  for (int j = 0; j < kQK4_0; ++j) q[j] = static_cast<uint8_t>(q[j] | (((h >> j) & 1) << 4));
}

// x ~= d * q + m over one block with q in [0, nmax]: m the block minimum.
struct MinScale {
  float d, m, id;
};

MinScale FitMinScale(const float* x, int nmax) {
  const auto [lo, hi] = std::minmax_element(x, x + kQK4_0);
  const float d = (*hi - *lo) / static_cast<float>(nmax);
  return {d, *lo, d != 0.0f ? 1.0f / d : 0.0f};
}

void QuantizeWithMin(const float* x, int nmax, const MinScale& f, uint8_t* q) {
  for (int j = 0; j < kQK4_0; ++j)
    q[j] = static_cast<uint8_t>(std::clamp(NearestInt((x[j] - f.m) * f.id), 0, nmax));
}

}  // namespace

void Q4_1ToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float d = Fp16ToFp32(b[i].d), m = Fp16ToFp32(b[i].m);
    uint8_t q[kQK4_0];
    UnpackNibbles(b[i].qs, q);
    for (int j = 0; j < kQK4_0; ++j) dst[i * kQK4_0 + j] = static_cast<float>(q[j]) * d + m;
  }
}

void Q4_1FromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_1*>(dst);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const MinScale f = FitMinScale(src + i * kQK4_0, 15);
    b[i].d = Fp32ToFp16(f.d);
    b[i].m = Fp32ToFp16(f.m);
    uint8_t q[kQK4_0];
    QuantizeWithMin(src + i * kQK4_0, 15, f, q);
    PackNibbles(q, b[i].qs);
  }
}

void Q5_0ToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    uint8_t q[kQK4_0];
    Unpack5(b[i].qs, b[i].qh, q);
    for (int j = 0; j < kQK4_0; ++j) dst[i * kQK4_0 + j] = static_cast<float>(q[j] - 16) * d;
  }
}

void Q5_0FromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float* x = src + i * kQK4_0;
    // As Q4_0: the signed value of largest magnitude maps to -16.
    const float d = SignedAbsMax(x, kQK4_0) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = Fp32ToFp16(d);
    uint8_t q[kQK4_0];
    for (int j = 0; j < kQK4_0; ++j)
      q[j] = static_cast<uint8_t>(std::clamp(NearestInt(x[j] * id) + 16, 0, 31));
    Pack5(q, b[i].qs, b[i].qh);
  }
}

void Q5_1ToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float d = Fp16ToFp32(b[i].d), m = Fp16ToFp32(b[i].m);
    uint8_t q[kQK4_0];
    Unpack5(b[i].qs, b[i].qh, q);
    for (int j = 0; j < kQK4_0; ++j) dst[i * kQK4_0 + j] = static_cast<float>(q[j]) * d + m;
  }
}

void Q5_1FromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const MinScale f = FitMinScale(src + i * kQK4_0, 31);
    b[i].d = Fp32ToFp16(f.d);
    b[i].m = Fp32ToFp16(f.m);
    uint8_t q[kQK4_0];
    QuantizeWithMin(src + i * kQK4_0, 31, f, q);
    Pack5(q, b[i].qs, b[i].qh);
  }
}

void Q8_1ToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_1*>(src);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    for (int j = 0; j < kQK8_0; ++j) dst[i * kQK8_0 + j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void Q8_1FromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    // Q8_0's x86 rule, and s from the unrounded d times the integer sum.
    const float d = QuantizeQ8Block(src + i * kQK8_0, b[i].qs);
    int sum = 0;
    for (int j = 0; j < kQK8_0; ++j) sum += b[i].qs[j];
    b[i].d = Fp32ToFp16(d);
    b[i].s = Fp32ToFp16(d * static_cast<float>(sum));
  }
}

void IQ4_NLToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    uint8_t q[kQK4_0];
    UnpackNibbles(b[i].qs, q);
    for (int j = 0; j < kQK4_0; ++j)
      dst[i * kQK4_0 + j] = d * static_cast<float>(kIQ4NLValues[q[j]]);
  }
}

void IQ4_NLFromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockIQ4_NL*>(dst);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float* x = src + i * kQK4_0;
    b[i].d = Fp32ToFp16(fit::FitIQ4Scale(x, kQK4_0));
    const float d = Fp16ToFp32(b[i].d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t q[kQK4_0];
    for (int j = 0; j < kQK4_0; ++j) q[j] = static_cast<uint8_t>(fit::NearestIQ4Index(x[j] * id));
    PackNibbles(q, b[i].qs);
  }
}

}  // namespace valet::scalar
