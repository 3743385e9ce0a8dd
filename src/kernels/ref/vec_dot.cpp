// Reference dot products. Quantized types multiply integers within a block and
// apply the float scales once per block (per super-block for the K-quants),
// as llama.cpp does, against the activation types llama.cpp pairs them with;
// for the super-block types in exactly the order the SIMD tiles use, which
// makes those bit-exact with this reference. Float types accumulate in double
// so the reference is the most accurate of the variants.
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_blocks_k.h"
#include "kernels/ref/scalar.h"

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

namespace {

constexpr int kHalf = kQK4_0 / 2;

// Unsigned quants of one 32-element block, element order.
void Nibbles(const uint8_t* qs, int* q) {
  for (int j = 0; j < kHalf; ++j) {
    q[j] = qs[j] & 0x0f;
    q[j + kHalf] = qs[j] >> 4;
  }
}

void Quants5(const uint8_t* qs, const uint8_t* qh, int* q) {
  Nibbles(qs, q);
  uint32_t h;
  std::memcpy(&h, qh, sizeof(h));
  for (int j = 0; j < kQK4_0; ++j) q[j] |= static_cast<int>((h >> j) & 1) << 4;
}

int DotI(const int* q, const int8_t* y, int offset) {
  int sum = 0;
  for (int j = 0; j < kQK4_0; ++j) sum += (q[j] - offset) * y[j];
  return sum;
}

float Scale(uint16_t a, uint16_t b) { return Fp16ToFp32(a) * Fp16ToFp32(b); }

}  // namespace

float DotQ4_1(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ4_1*>(x);
  const auto* b = static_cast<const BlockQ8_1*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    int q[kQK4_0];
    Nibbles(a[i].qs, q);
    sum += Scale(a[i].d, b[i].d) * static_cast<float>(DotI(q, b[i].qs, 0)) + Scale(a[i].m, b[i].s);
  }
  return sum;
}

float DotQ5_0(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ5_0*>(x);
  const auto* b = static_cast<const BlockQ8_0*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    int q[kQK4_0];
    Quants5(a[i].qs, a[i].qh, q);
    sum += static_cast<float>(DotI(q, b[i].qs, 16)) * Scale(a[i].d, b[i].d);
  }
  return sum;
}

float DotQ5_1(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ5_1*>(x);
  const auto* b = static_cast<const BlockQ8_1*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    int q[kQK4_0];
    Quants5(a[i].qs, a[i].qh, q);
    sum += Scale(a[i].d, b[i].d) * static_cast<float>(DotI(q, b[i].qs, 0)) + Scale(a[i].m, b[i].s);
  }
  return sum;
}

float DotIQ4_NL(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockIQ4_NL*>(x);
  const auto* b = static_cast<const BlockQ8_0*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    int q[kQK4_0];
    Nibbles(a[i].qs, q);
    for (int& v : q) v = kIQ4NLValues[v];
    sum += static_cast<float>(DotI(q, b[i].qs, 0)) * Scale(a[i].d, b[i].d);
  }
  return sum;
}

namespace {

// Sum over the 16 groups of scale_g * (q . y) for the 2-bit layouts, q taken
// from `quant(k)` for element k.
template <class Quant, class GroupScale>
int TwoBitSum(const int8_t* y, Quant quant, GroupScale scale) {
  int isum = 0;
  for (int g = 0; g < 16; ++g) {
    int s = 0;
    for (int k = 16 * g; k < 16 * g + 16; ++k) s += quant(k) * y[k];
    isum += scale(g) * s;
  }
  return isum;
}

// Bits 2j..2j+1 of qs[32n + l] for element k = 128n + 32j + l.
int TwoBits(const uint8_t* qs, int k) {
  return (qs[32 * (k / 128) + k % 32] >> (2 * ((k % 128) / 32))) & 3;
}

}  // namespace

float DotQ2_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ2_K*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int msum = 0;
    for (int g = 0; g < 16; ++g) msum += (a[i].scales[g] >> 4) * b[i].bsums[g];
    const int isum = TwoBitSum(
        b[i].qs, [&](int k) { return TwoBits(a[i].qs, k); },
        [&](int g) { return a[i].scales[g] & 0x0f; });
    const float d = Fp16ToFp32(a[i].d) * b[i].d;
    const float dmin = Fp16ToFp32(a[i].dmin) * b[i].d;
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sum;
}

float DotQ3_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ3_K*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto quant = [&](int k) {
      const int high = (a[i].hmask[k % 32] >> (k / 32)) & 1;  // bit 4n + j
      return TwoBits(a[i].qs, k) + 4 * high - 4;
    };
    const int isum =
        TwoBitSum(b[i].qs, quant, [&](int g) { return UnpackQ3KScale(a[i].scales, g) - 32; });
    sum += (Fp16ToFp32(a[i].d) * b[i].d) * static_cast<float>(isum);
  }
  return sum;
}

float DotQ5_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ5_K*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int isum = 0, msum = 0;
    for (int c = 0; c < 4; ++c) {
      uint8_t sc[2], mn[2];
      int part[2] = {0, 0};
      for (int h = 0; h < 2; ++h) {
        UnpackQ4KScaleMin(a[i].scales, 2 * c + h, &sc[h], &mn[h]);
        msum += mn[h] * (b[i].bsums[4 * c + 2 * h] + b[i].bsums[4 * c + 2 * h + 1]);
      }
      for (int l = 0; l < 32; ++l) {
        const uint8_t q = a[i].qs[32 * c + l], qh = a[i].qh[l];
        part[0] += ((q & 0x0f) | (((qh >> (2 * c)) & 1) << 4)) * b[i].qs[64 * c + l];
        part[1] += ((q >> 4) | (((qh >> (2 * c + 1)) & 1) << 4)) * b[i].qs[64 * c + 32 + l];
      }
      isum += sc[0] * part[0] + sc[1] * part[1];
    }
    const float d = Fp16ToFp32(a[i].d) * b[i].d;
    const float dmin = Fp16ToFp32(a[i].dmin) * b[i].d;
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sum;
}

float DotIQ4_XS(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockIQ4_XS*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int isum = 0;
    for (int ib = 0; ib < 8; ++ib) {
      int q[kQK4_0];
      Nibbles(a[i].qs + 16 * ib, q);
      for (int& v : q) v = kIQ4NLValues[v];
      isum += (UnpackIQ4XSScale(a[i], ib) - 32) * DotI(q, b[i].qs + 32 * ib, 0);
    }
    sum += (Fp16ToFp32(a[i].d) * b[i].d) * static_cast<float>(isum);
  }
  return sum;
}

}  // namespace valet::scalar
