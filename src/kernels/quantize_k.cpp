// Reference dequantizers and weight quantizers for Q4_K and Q6_K.
//
// The dequantizers define the format. The quantizers are valet's own (they
// feed `valet synth-model`), built on the fits of quant_fit.h.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/kernels_scalar.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_fit.h"

namespace valet::scalar {
namespace {

void QuantizeBlockQ4K(const float* x, BlockQ4_K* b) {
  fit::AffineBlock f;
  fit::QuantizeAffine(x, 8, 32, 15, 63, &f);
  b->d = f.d16;
  b->dmin = f.dmin16;
  PackQ4KScales(f.ls, f.lm, b->scales);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      b->qs[32 * c + l] = static_cast<uint8_t>(f.q[64 * c + l] | (f.q[64 * c + 32 + l] << 4));
    }
  }
}

void QuantizeBlockQ6K(const float* x, BlockQ6_K* b) {
  fit::SymmetricBlock f;
  fit::QuantizeSymmetric(x, 16, 16, 32, 128, &f);
  b->d = f.d16;
  for (int g = 0; g < 16; ++g) b->scales[g] = f.ls[g];
  uint8_t q[kQK_K];
  for (int j = 0; j < kQK_K; ++j) q[j] = static_cast<uint8_t>(f.q[j] + 32);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* qq = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      b->ql[64 * h + l] = static_cast<uint8_t>((qq[l] & 0x0f) | ((qq[l + 64] & 0x0f) << 4));
      b->ql[64 * h + l + 32] = static_cast<uint8_t>((qq[l + 32] & 0x0f) | ((qq[l + 96] & 0x0f) << 4));
      b->qh[32 * h + l] = static_cast<uint8_t>((qq[l] >> 4) | ((qq[l + 32] >> 4) << 2) |
                                               ((qq[l + 64] >> 4) << 4) | ((qq[l + 96] >> 4) << 6));
    }
  }
}

}  // namespace

void Q4_KToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = Fp16ToFp32(b[i].d), dmin = Fp16ToFp32(b[i].dmin);
    float* y = dst + i * kQK_K;
    for (int c = 0; c < 4; ++c) {
      uint8_t sc0, m0, sc1, m1;
      UnpackQ4KScaleMin(b[i].scales, 2 * c, &sc0, &m0);
      UnpackQ4KScaleMin(b[i].scales, 2 * c + 1, &sc1, &m1);
      const float d0 = d * sc0, mn0 = dmin * m0, d1 = d * sc1, mn1 = dmin * m1;
      const uint8_t* q = b[i].qs + 32 * c;
      for (int l = 0; l < 32; ++l) {
        y[64 * c + l] = d0 * static_cast<float>(q[l] & 0x0f) - mn0;
        y[64 * c + 32 + l] = d1 * static_cast<float>(q[l] >> 4) - mn1;
      }
    }
  }
}

void Q4_KFromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) QuantizeBlockQ4K(src + i * kQK_K, &b[i]);
}

void Q6_KToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b[i].ql + 64 * h;
      const uint8_t* qh = b[i].qh + 32 * h;
      const int8_t* sc = b[i].scales + 8 * h;
      float* y = dst + i * kQK_K + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int g = l / 16;
        const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[g]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[g + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[g + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[g + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void Q6_KFromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) QuantizeBlockQ6K(src + i * kQK_K, &b[i]);
}

}  // namespace valet::scalar
