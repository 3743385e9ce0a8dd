// Reference dequantizers and weight quantizers for Q4_K and Q6_K.
//
// The dequantizers define the format. The quantizers are valet's own (they
// feed `valet synth-model`): a per-sub-block least-squares fit, then the
// sub-block scales quantized against one super-block scale, then the quants
// re-chosen against the scales as actually stored.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/kernels_scalar.h"
#include "kernels/quant_blocks.h"
#include "kernels/rounding.h"

namespace valet::scalar {
namespace {

constexpr int kSub4K = 32;   // Q4_K sub-block length
constexpr int kSub6K = 16;   // Q6_K group length

// Fit x ~= scale * q - min with q in [0, 15] and min >= 0 (so zero is exact-ish).
struct AffineFit {
  float scale;
  float min;
};

float AffineError(const float* x, AffineFit f) {
  float err = 0.0f;
  for (int j = 0; j < kSub4K; ++j) {
    const int q = f.scale > 0.0f ? std::clamp(NearestInt((x[j] + f.min) / f.scale), 0, 15) : 0;
    const float e = f.scale * static_cast<float>(q) - f.min - x[j];
    err += e * e;
  }
  return err;
}

// One least-squares step: with the quants fixed, the best (scale, min) solve
// 2x2 normal equations; min is clamped to >= 0 as the format requires.
AffineFit RefitAffine(const float* x, AffineFit f) {
  double sq = 0, sqq = 0, sx = 0, sxq = 0;
  for (int j = 0; j < kSub4K; ++j) {
    const int q = std::clamp(NearestInt((x[j] + f.min) / f.scale), 0, 15);
    sq += q;
    sqq += static_cast<double>(q) * q;
    sx += x[j];
    sxq += static_cast<double>(x[j]) * q;
  }
  const double det = kSub4K * sqq - sq * sq;
  if (det <= 0) return f;
  double scale = (kSub4K * sxq - sq * sx) / det;
  double offset = (sqq * sx - sq * sxq) / det;  // x ~= scale*q + offset
  if (offset > 0) {
    offset = 0;
    scale = sqq > 0 ? sxq / sqq : 0;
  }
  if (scale <= 0) return f;
  return {static_cast<float>(scale), static_cast<float>(-offset)};
}

AffineFit FitSubBlock4K(const float* x) {
  float lo = 0.0f, hi = 0.0f;
  for (int j = 0; j < kSub4K; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  AffineFit best{(hi - lo) / 15.0f, -lo};
  if (best.scale == 0.0f) return best;
  float best_err = AffineError(x, best);
  AffineFit cur = best;
  for (int iter = 0; iter < 4; ++iter) {
    cur = RefitAffine(x, cur);
    const float err = AffineError(x, cur);
    if (err < best_err) {
      best_err = err;
      best = cur;
    }
  }
  return best;
}

void PackQ4KScales(const uint8_t* ls, const uint8_t* lm, uint8_t* s) {
  std::memset(s, 0, kK_ScaleBytes);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      s[j] = ls[j];
      s[j + 4] = lm[j];
    } else {
      s[j + 4] = static_cast<uint8_t>((ls[j] & 0x0f) | ((lm[j] & 0x0f) << 4));
      s[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      s[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
}

void QuantizeBlockQ4K(const float* x, BlockQ4_K* b) {
  AffineFit fits[8];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    fits[j] = FitSubBlock4K(x + j * kSub4K);
    max_scale = std::max(max_scale, fits[j].scale);
    max_min = std::max(max_min, fits[j].min);
  }
  const float d = max_scale / 63.0f;
  const float dmin = max_min / 63.0f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = static_cast<uint8_t>(d > 0 ? std::clamp(NearestInt(fits[j].scale / d), 0, 63) : 0);
    lm[j] = static_cast<uint8_t>(dmin > 0 ? std::clamp(NearestInt(fits[j].min / dmin), 0, 63) : 0);
  }
  b->d = Fp32ToFp16(d);
  b->dmin = Fp32ToFp16(dmin);
  PackQ4KScales(ls, lm, b->scales);
  const float d16 = Fp16ToFp32(b->d), dmin16 = Fp16ToFp32(b->dmin);
  uint8_t q[kQK_K];
  for (int j = 0; j < 8; ++j) {
    const float sc = d16 * ls[j];
    const float mn = dmin16 * lm[j];
    for (int k = 0; k < kSub4K; ++k) {
      const float v = x[j * kSub4K + k];
      q[j * kSub4K + k] = static_cast<uint8_t>(sc > 0 ? std::clamp(NearestInt((v + mn) / sc), 0, 15) : 0);
    }
  }
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      b->qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
    }
  }
}

// Best symmetric scale for a group of 16 with q in [-32, 31]: try a few
// divisors around the extremes and keep the least squared error.
float FitGroup6K(const float* x) {
  const float max = SignedAbsMax(x, kSub6K);
  if (max == 0.0f) return 0.0f;
  float best_scale = 0.0f, best_err = INFINITY;
  for (int k = 0; k < 9; ++k) {
    const float divisor = k < 5 ? -32.0f + 0.5f * k : 31.0f - 0.5f * (k - 5);
    const float scale = max / divisor;
    float err = 0.0f;
    for (int j = 0; j < kSub6K; ++j) {
      const int q = std::clamp(NearestInt(x[j] / scale), -32, 31);
      const float e = scale * static_cast<float>(q) - x[j];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_scale = scale;
    }
  }
  return best_scale;
}

void QuantizeBlockQ6K(const float* x, BlockQ6_K* b) {
  float scales[16];
  for (int g = 0; g < 16; ++g) scales[g] = FitGroup6K(x + g * kSub6K);
  const float max_scale = SignedAbsMax(scales, 16);
  const float d = max_scale / -128.0f;
  b->d = Fp32ToFp16(d);
  const float d16 = Fp16ToFp32(b->d);
  uint8_t q[kQK_K];
  for (int g = 0; g < 16; ++g) {
    const int ls = d != 0.0f ? std::clamp(NearestInt(scales[g] / d), -128, 127) : 0;
    b->scales[g] = static_cast<int8_t>(ls);
    const float sc = d16 * static_cast<float>(ls);
    for (int j = 0; j < kSub6K; ++j) {
      const int v = sc != 0.0f ? std::clamp(NearestInt(x[g * kSub6K + j] / sc), -32, 31) : 0;
      q[g * kSub6K + j] = static_cast<uint8_t>(v + 32);
    }
  }
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
