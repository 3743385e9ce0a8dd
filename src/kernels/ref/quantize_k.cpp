// Reference dequantizers and weight quantizers for the super-block types:
// Q4_K and Q6_K, then Q2_K, Q3_K, Q5_K and IQ4_XS.
//
// The dequantizers define the formats (quant_blocks.h, quant_blocks_k.h). The
// quantizers are valet's own (they feed `valet synth-model`), built on the
// fits of quant_fit.h.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_blocks_k.h"
#include "kernels/quant_fit.h"
#include "kernels/ref/scalar.h"
#include "kernels/rounding.h"

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

namespace {

// Element index of (half n, shift j, position l) in the 2-bit layouts.
constexpr int TwoBitElement(int n, int j, int l) { return 128 * n + 32 * j + l; }

void Pack2Bit(const uint8_t* q, uint8_t* qs) {
  std::memset(qs, 0, kQK_K / 4);
  for (int n = 0; n < 2; ++n) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l)
        qs[32 * n + l] |= static_cast<uint8_t>((q[TwoBitElement(n, j, l)] & 3) << (2 * j));
    }
  }
}

void QuantizeBlockQ2K(const float* x, BlockQ2_K* b) {
  fit::AffineBlock f;
  fit::QuantizeAffine(x, 16, 16, 3, 15, &f);
  b->d = f.d16;
  b->dmin = f.dmin16;
  for (int g = 0; g < 16; ++g) b->scales[g] = static_cast<uint8_t>(f.ls[g] | (f.lm[g] << 4));
  Pack2Bit(f.q, b->qs);
}

void QuantizeBlockQ3K(const float* x, BlockQ3_K* b) {
  fit::SymmetricBlock f;
  fit::QuantizeSymmetric(x, 16, 16, 4, 32, &f);
  b->d = f.d16;
  std::memset(b->scales, 0, sizeof(b->scales));
  for (int g = 0; g < 16; ++g) {
    const int s = f.ls[g] + 32;
    if (g < 8) {
      b->scales[g] |= static_cast<uint8_t>(s & 0x0f);
    } else {
      b->scales[g - 8] |= static_cast<uint8_t>((s & 0x0f) << 4);
    }
    b->scales[8 + g % 4] |= static_cast<uint8_t>((s >> 4) << (2 * (g / 4)));
  }
  uint8_t q[kQK_K];
  for (int k = 0; k < kQK_K; ++k) q[k] = static_cast<uint8_t>(f.q[k] + 4);  // 0..7
  Pack2Bit(q, b->qs);
  std::memset(b->hmask, 0, sizeof(b->hmask));
  for (int n = 0; n < 2; ++n) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) {
        b->hmask[l] |= static_cast<uint8_t>((q[TwoBitElement(n, j, l)] >> 2) << (4 * n + j));
      }
    }
  }
}

void QuantizeBlockQ5K(const float* x, BlockQ5_K* b) {
  fit::AffineBlock f;
  fit::QuantizeAffine(x, 8, 32, 31, 63, &f);
  b->d = f.d16;
  b->dmin = f.dmin16;
  PackQ4KScales(f.ls, f.lm, b->scales);
  std::memset(b->qh, 0, sizeof(b->qh));
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t lo = f.q[64 * c + l], hi = f.q[64 * c + 32 + l];
      b->qs[32 * c + l] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
      b->qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
  }
}

void QuantizeBlockIQ4XS(const float* x, BlockIQ4_XS* b) {
  float scales[8];
  for (int ib = 0; ib < 8; ++ib) scales[ib] = fit::FitIQ4Scale(x + 32 * ib, 32);
  const float d = SignedAbsMax(scales, 8) / -32.0f;
  b->d = Fp32ToFp16(d);
  const float d16 = Fp16ToFp32(b->d);
  b->scales_h = 0;
  std::memset(b->scales_l, 0, sizeof(b->scales_l));
  for (int ib = 0; ib < 8; ++ib) {
    const int ls = d != 0.0f ? std::clamp(NearestInt(scales[ib] / d), -32, 31) : 0;
    const int s = ls + 32;
    b->scales_l[ib / 2] |= static_cast<uint8_t>((s & 0x0f) << (4 * (ib % 2)));
    b->scales_h = static_cast<uint16_t>(b->scales_h | ((s >> 4) << (2 * ib)));
    const float dl = d16 * static_cast<float>(ls);
    const float id = dl != 0.0f ? 1.0f / dl : 0.0f;
    const float* xs = x + 32 * ib;
    for (int j = 0; j < 16; ++j) {
      const int lo = fit::NearestIQ4Index(xs[j] * id), hi = fit::NearestIQ4Index(xs[j + 16] * id);
      b->qs[16 * ib + j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

}  // namespace

void Q2_KToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = Fp16ToFp32(b[i].d), dmin = Fp16ToFp32(b[i].dmin);
    for (int hn = 0; hn < 2; ++hn) {
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < 32; ++l) {
          const int k = TwoBitElement(hn, j, l);
          const uint8_t sc = b[i].scales[k / 16];
          const int q = (b[i].qs[32 * hn + l] >> (2 * j)) & 3;
          dst[i * kQK_K + k] = d * static_cast<float>(sc & 0x0f) * static_cast<float>(q) -
                               dmin * static_cast<float>(sc >> 4);
        }
      }
    }
  }
}

void Q2_KFromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ2_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) QuantizeBlockQ2K(src + i * kQK_K, &b[i]);
}

void Q3_KToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    for (int hn = 0; hn < 2; ++hn) {
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < 32; ++l) {
          const int k = TwoBitElement(hn, j, l);
          const int sc = UnpackQ3KScale(b[i].scales, k / 16) - 32;
          const int q2 = (b[i].qs[32 * hn + l] >> (2 * j)) & 3;
          const int high = (b[i].hmask[l] >> (4 * hn + j)) & 1;
          dst[i * kQK_K + k] = d * static_cast<float>(sc) * static_cast<float>(q2 + 4 * high - 4);
        }
      }
    }
  }
}

void Q3_KFromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ3_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) QuantizeBlockQ3K(src + i * kQK_K, &b[i]);
}

void Q5_KToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_K*>(src);
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
        const int lo = (q[l] & 0x0f) | (((b[i].qh[l] >> (2 * c)) & 1) << 4);
        const int hi = (q[l] >> 4) | (((b[i].qh[l] >> (2 * c + 1)) & 1) << 4);
        y[64 * c + l] = d0 * static_cast<float>(lo) - mn0;
        y[64 * c + 32 + l] = d1 * static_cast<float>(hi) - mn1;
      }
    }
  }
}

void Q5_KFromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) QuantizeBlockQ5K(src + i * kQK_K, &b[i]);
}

void IQ4_XSToFloat(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const float dl = d * static_cast<float>(UnpackIQ4XSScale(b[i], ib) - 32);
      float* y = dst + i * kQK_K + 32 * ib;
      const uint8_t* qs = b[i].qs + 16 * ib;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIQ4NLValues[qs[j] & 0x0f]);
        y[j + 16] = dl * static_cast<float>(kIQ4NLValues[qs[j] >> 4]);
      }
    }
  }
}

void IQ4_XSFromFloat(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockIQ4_XS*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) QuantizeBlockIQ4XS(src + i * kQK_K, &b[i]);
}

}  // namespace valet::scalar
