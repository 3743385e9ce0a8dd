// Reference dot products. Quantized types multiply integers within a block and
// apply the float scales once per block (per super-block for the K-quants),
// as llama.cpp does; float types accumulate in double so the reference is the
// most accurate of the variants.
#include "kernels/fp16.h"
#include "kernels/kernels_scalar.h"
#include "kernels/quant_blocks.h"

namespace valet::scalar {

float DotF32(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const float*>(x);
  const auto* b = static_cast<const float*>(y);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * b[i];
  return static_cast<float>(sum);
}

float DotF16(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const uint16_t*>(x);
  const auto* b = static_cast<const uint16_t*>(y);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(Fp16ToFp32(a[i]) * Fp16ToFp32(b[i]));
  return static_cast<float>(sum);
}

float DotBf16(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const uint16_t*>(x);
  const auto* b = static_cast<const uint16_t*>(y);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(Bf16ToFp32(a[i]) * Bf16ToFp32(b[i]));
  return static_cast<float>(sum);
}

float DotQ8_0(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ8_0*>(x);
  const auto* b = static_cast<const BlockQ8_0*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK8_0; ++j) isum += a[i].qs[j] * b[i].qs[j];
    sum += static_cast<float>(isum) * (Fp16ToFp32(a[i].d) * Fp16ToFp32(b[i].d));
  }
  return sum;
}

float DotQ4_0(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ4_0*>(x);
  const auto* b = static_cast<const BlockQ8_0*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      isum += ((a[i].qs[j] & 0x0f) - 8) * b[i].qs[j];
      isum += ((a[i].qs[j] >> 4) - 8) * b[i].qs[j + kQK4_0 / 2];
    }
    sum += static_cast<float>(isum) * (Fp16ToFp32(a[i].d) * Fp16ToFp32(b[i].d));
  }
  return sum;
}

namespace {

// Sum over sub-blocks of scale * (nibbles . activations) for one Q4_K block.
int Q4KScaledSum(const BlockQ4_K& a, const BlockQ8_K& b, const uint8_t* sc) {
  int isum = 0;
  for (int c = 0; c < 4; ++c) {
    const uint8_t* q = a.qs + 32 * c;
    const int8_t* y = b.qs + 64 * c;
    int lo = 0, hi = 0;
    for (int l = 0; l < 32; ++l) {
      lo += (q[l] & 0x0f) * y[l];
      hi += (q[l] >> 4) * y[l + 32];
    }
    isum += sc[2 * c] * lo + sc[2 * c + 1] * hi;
  }
  return isum;
}

}  // namespace

float DotQ4_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ4_K*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], mn[8];
    int msum = 0;
    for (int j = 0; j < 8; ++j) {
      UnpackQ4KScaleMin(a[i].scales, j, &sc[j], &mn[j]);
      msum += mn[j] * (b[i].bsums[2 * j] + b[i].bsums[2 * j + 1]);
    }
    const int isum = Q4KScaledSum(a[i], b[i], sc);
    const float d = Fp16ToFp32(a[i].d) * b[i].d;
    const float dmin = Fp16ToFp32(a[i].dmin) * b[i].d;
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sum;
}

float DotQ6_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ6_K*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int isum = 0;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = a[i].ql + 64 * h;
      const uint8_t* qh = a[i].qh + 32 * h;
      const int8_t* sc = a[i].scales + 8 * h;
      const int8_t* q8 = b[i].qs + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int g = l / 16;
        const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        isum += sc[g] * q1 * q8[l] + sc[g + 2] * q2 * q8[l + 32] + sc[g + 4] * q3 * q8[l + 64] +
                sc[g + 6] * q4 * q8[l + 96];
      }
    }
    sum += (Fp16ToFp32(a[i].d) * b[i].d) * static_cast<float>(isum);
  }
  return sum;
}

}  // namespace valet::scalar
