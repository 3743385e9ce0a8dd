// The reference row-group kernels: one output at a time, quants read through
// the interleaved layout, the float update a fused multiply-add as the SIMD
// lanes do it, so the SIMD kernels equal these bit for bit.
#include <cmath>
#include <type_traits>

#include "kernels/fp16.h"
#include "kernels/packed_blocks.h"
#include "kernels/packed_kernels.h"

namespace valet::scalar {
namespace {

// Element k (0..31) of row r's block, as a signed quant.
int QuantQ4_0x8(const BlockQ4_0x8& b, int r, int k) {
  const int byte = k % 16;
  const uint8_t v = b.qs[32 * (byte / 4) + 4 * r + byte % 4];
  return (k < 16 ? (v & 0x0f) : (v >> 4)) - 8;
}

int QuantQ8_0x8(const BlockQ8_0x8& b, int r, int k) { return b.qs[32 * (k / 4) + 4 * r + k % 4]; }

// Byte k % 16 of row r's qs, nibble k / 16: the unsigned 4 bits of element k.
template <class Packed>
int Nibble(const Packed& b, int r, int k) {
  const int byte = k % 16;
  const uint8_t v = b.qs[32 * (byte / 4) + 4 * r + byte % 4];
  return k < 16 ? (v & 0x0f) : (v >> 4);
}

// The unsigned 5 bits of element k (packed_blocks.h: qh regrouped by byte offset).
template <class Packed>
int Quant5(const Packed& b, int r, int k) {
  const int byte = k % 16;
  const int bit = (k < 16 ? 0 : 4) + byte / 4;
  return Nibble(b, r, k) | (((b.qh[4 * r + byte % 4] >> bit) & 1) << 4);
}

int QuantQ4_1x8(const BlockQ4_1x8& b, int r, int k) { return Nibble(b, r, k); }
int QuantQ5_0x8(const BlockQ5_0x8& b, int r, int k) { return Quant5(b, r, k) - 16; }
int QuantQ5_1x8(const BlockQ5_1x8& b, int r, int k) { return Quant5(b, r, k); }
int QuantIQ4_NLx8(const BlockIQ4_NLx8& b, int r, int k) { return kIQ4NLValues[Nibble(b, r, k)]; }

// Per block: acc = fma(dw dy, isum, acc); for the types with an offset m
// (Q4_1, Q5_1, BlockQ8_1S activations) then acc = fma(m, s, acc).
template <class Packed, int (*Quant)(const Packed&, int, int), int C>
void PackedLoop(int64_t n, const void* x, size_t, const void* y, size_t ldy, float* out,
                int64_t ldo) {
  constexpr bool kOffset = requires(const Packed& p) { p.m; };
  using Act = std::conditional_t<kOffset, BlockQ8_1S, BlockQ8_0S>;
  const auto* w = static_cast<const Packed*>(x);
  const int64_t nb = n / kQK8_0;
  for (int j = 0; j < C; ++j) {
    const auto* a = reinterpret_cast<const Act*>(static_cast<const uint8_t*>(y) + j * ldy);
    for (int r = 0; r < kPackRows; ++r) {
      float acc = 0.0f;
      for (int64_t l = 0; l < nb; ++l) {
        int isum = 0;
        for (int k = 0; k < kQK8_0; ++k) isum += Quant(w[l], r, k) * a[l].qs[k];
        const float d = Fp16ToFp32(w[l].d[r]) * a[l].d;
        acc = std::fma(d, static_cast<float>(isum), acc);
        if constexpr (kOffset) acc = std::fma(Fp16ToFp32(w[l].m[r]), a[l].s, acc);
      }
      out[j * ldo + r] = acc;
    }
  }
}

// Element k (0..31) of sub-block s of row r, 4 bits (Q4_K) or 5 (Q5_K).
int QuantQ4_Kx8(const BlockQ4_Kx8& b, int r, int s, int k) {
  const uint8_t v = b.qs[256 * (s / 2) + 32 * (k / 4) + 4 * r + k % 4];
  return s % 2 == 0 ? (v & 0x0f) : (v >> 4);
}

int QuantQ5_Kx8(const BlockQ5_Kx8& b, int r, int s, int k) {
  const uint8_t v = b.qs[256 * (s / 2) + 32 * (k / 4) + 4 * r + k % 4];
  const int high = (b.qh[32 * (k / 4) + 4 * r + k % 4] >> s) & 1;
  return (s % 2 == 0 ? (v & 0x0f) : (v >> 4)) | (high << 4);
}

// Per super-block: isum = sum_j sc_j (q_j . y_j), msum = sum_j m_j bsum_j;
// acc = fma(d dy, isum, acc), then acc = fma(-(dmin dy), msum, acc).
template <class Packed, int (*Quant)(const Packed&, int, int, int), int C>
void PackedQ4Q5_K(int64_t n, const void* x, size_t, const void* y, size_t ldy, float* out, int64_t ldo) {
  const auto* w = static_cast<const Packed*>(x);
  const int64_t nb = n / kQK_K;
  for (int j = 0; j < C; ++j) {
    const auto* a = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(y) + j * ldy);
    for (int r = 0; r < kPackRows; ++r) {
      float acc = 0.0f;
      for (int64_t l = 0; l < nb; ++l) {
        const Packed& b = w[l];
        int isum = 0, msum = 0;
        for (int s = 0; s < 8; ++s) {
          int dot = 0;
          for (int k = 0; k < 32; ++k) dot += Quant(b, r, s, k) * a[l].qs[32 * s + k];
          isum += b.sc[8 * s + r] * dot;
          msum += b.mins[16 * (s / 2) + 2 * r + s % 2] * (a[l].bsums[2 * s] + a[l].bsums[2 * s + 1]);
        }
        acc = std::fma(Fp16ToFp32(b.d[r]) * a[l].d, static_cast<float>(isum), acc);
        acc = std::fma(-(Fp16ToFp32(b.dmin[r]) * a[l].d), static_cast<float>(msum), acc);
      }
      out[j * ldo + r] = acc;
    }
  }
}

// Element e (0..255) of row r as a signed quant: Q6_K's u - 32, Q3_K's
// low | high << 2, less 4.
int SignedQuantK(const BlockQ6_Kx8& b, int r, int e) {
  const int s = e / 32, m = (e % 32) / 4, k = e % 4;
  const int lo = (b.ql[256 * (s / 2) + 32 * m + 4 * r + k] >> (4 * (s % 2))) & 15;
  const int hi = (b.qh[256 * (s / 4) + 32 * m + 4 * r + k] >> (2 * (s % 4))) & 3;
  return (lo | (hi << 4)) - 32;
}

int SignedQuantK(const BlockQ3_Kx8& b, int r, int e) {
  const int s = e / 32, m = (e % 32) / 4, k = e % 4;
  const int lo = (b.qs[256 * (s / 4) + 32 * m + 4 * r + k] >> (2 * (s % 4))) & 3;
  const int hi = (b.hmask[32 * m + 4 * r + k] >> s) & 1;
  return (lo | (hi << 2)) - 4;
}

// Q3_K and Q6_K, per super-block: isum = sum_g sc_g sum_{e in g} q_e y_e;
// acc = fma(d dy, isum, acc).
template <class Packed, int C>
void PackedQ3Q6_K(int64_t n, const void* x, size_t, const void* y, size_t ldy, float* out, int64_t ldo) {
  const auto* w = static_cast<const Packed*>(x);
  const int64_t nb = n / kQK_K;
  for (int j = 0; j < C; ++j) {
    const auto* a = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(y) + j * ldy);
    for (int r = 0; r < kPackRows; ++r) {
      float acc = 0.0f;
      for (int64_t l = 0; l < nb; ++l) {
        const Packed& b = w[l];
        int isum = 0;
        for (int g = 0; g < 16; ++g) {
          int dot = 0;
          for (int e = 16 * g; e < 16 * g + 16; ++e) dot += SignedQuantK(b, r, e) * a[l].qs[e];
          isum += b.sc[16 * (g / 2) + 2 * r + g % 2] * dot;
        }
        acc = std::fma(Fp16ToFp32(b.d[r]) * a[l].d, static_cast<float>(isum), acc);
      }
      out[j * ldo + r] = acc;
    }
  }
}

// Per super-block: isum = sum_s sc_s sum_{e in s} v_e y_e with v_e the
// kIQ4NLValues entry of element e's nibble; acc = fma(d dy, isum, acc).
template <int C>
void PackedIQ4_XS(int64_t n, const void* x, size_t, const void* y, size_t ldy, float* out, int64_t ldo) {
  const auto* w = static_cast<const BlockIQ4_XSx8*>(x);
  const int64_t nb = n / kQK_K;
  for (int j = 0; j < C; ++j) {
    const auto* a = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(y) + j * ldy);
    for (int r = 0; r < kPackRows; ++r) {
      float acc = 0.0f;
      for (int64_t l = 0; l < nb; ++l) {
        const BlockIQ4_XSx8& b = w[l];
        int isum = 0;
        for (int s = 0; s < 8; ++s) {
          int dot = 0;
          for (int k = 0; k < 32; ++k) {
            const int byte = k % 16;
            const uint8_t v = b.qs[128 * s + 32 * (byte / 4) + 4 * r + byte % 4];
            dot += kIQ4NLValues[k < 16 ? (v & 0x0f) : (v >> 4)] * a[l].qs[32 * s + k];
          }
          isum += b.sc[8 * s + r] * dot;
        }
        acc = std::fma(Fp16ToFp32(b.d[r]) * a[l].d, static_cast<float>(isum), acc);
      }
      out[j * ldo + r] = acc;
    }
  }
}

// Per super-block: isum = sum_g sc_g sum_{e in g} q_e y_e with q_e in 0..3,
// msum = sum_g m_g bsum_g; acc = fma(d dy, isum, acc), then
// acc = fma(-(dmin dy), msum, acc).
template <int C>
void PackedQ2_K(int64_t n, const void* x, size_t, const void* y, size_t ldy, float* out, int64_t ldo) {
  const auto* w = static_cast<const BlockQ2_Kx8*>(x);
  const int64_t nb = n / kQK_K;
  for (int j = 0; j < C; ++j) {
    const auto* a = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(y) + j * ldy);
    for (int r = 0; r < kPackRows; ++r) {
      float acc = 0.0f;
      for (int64_t l = 0; l < nb; ++l) {
        const BlockQ2_Kx8& b = w[l];
        int isum = 0, msum = 0;
        for (int g = 0; g < 16; ++g) {
          int dot = 0;
          for (int e = 16 * g; e < 16 * g + 16; ++e) {
            const int s = e / 32, m = (e % 32) / 4, k = e % 4;
            dot += ((b.qs[256 * (s / 4) + 32 * m + 4 * r + k] >> (2 * (s % 4))) & 3) * a[l].qs[e];
          }
          const uint8_t scales = b.sc[16 * (g / 2) + 2 * r + g % 2];
          isum += (scales & 15) * dot;
          msum += (scales >> 4) * a[l].bsums[g];
        }
        acc = std::fma(Fp16ToFp32(b.d[r]) * a[l].d, static_cast<float>(isum), acc);
        acc = std::fma(-(Fp16ToFp32(b.dmin[r]) * a[l].d), static_cast<float>(msum), acc);
      }
      out[j * ldo + r] = acc;
    }
  }
}

template <int C>
TileKernel Make(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
      return {PackedLoop<BlockQ4_0x8, QuantQ4_0x8, C>, kPackRows, C};
    case GgmlType::kQ8_0:
      return {PackedLoop<BlockQ8_0x8, QuantQ8_0x8, C>, kPackRows, C};
    case GgmlType::kQ4_1:
      return {PackedLoop<BlockQ4_1x8, QuantQ4_1x8, C>, kPackRows, C};
    case GgmlType::kQ5_0:
      return {PackedLoop<BlockQ5_0x8, QuantQ5_0x8, C>, kPackRows, C};
    case GgmlType::kQ5_1:
      return {PackedLoop<BlockQ5_1x8, QuantQ5_1x8, C>, kPackRows, C};
    case GgmlType::kIQ4_NL:
      return {PackedLoop<BlockIQ4_NLx8, QuantIQ4_NLx8, C>, kPackRows, C};
    case GgmlType::kQ4_K:
      return {PackedQ4Q5_K<BlockQ4_Kx8, QuantQ4_Kx8, C>, kPackRows, C};
    case GgmlType::kQ5_K:
      return {PackedQ4Q5_K<BlockQ5_Kx8, QuantQ5_Kx8, C>, kPackRows, C};
    case GgmlType::kQ2_K:
      return {PackedQ2_K<C>, kPackRows, C};
    case GgmlType::kIQ4_XS:
      return {PackedIQ4_XS<C>, kPackRows, C};
    case GgmlType::kQ3_K:
      return {PackedQ3Q6_K<BlockQ3_Kx8, C>, kPackRows, C};
    case GgmlType::kQ6_K:
      return {PackedQ3Q6_K<BlockQ6_Kx8, C>, kPackRows, C};
    default:
      return {};
  }
}

}  // namespace

TileKernel PackedTile(GgmlType type, int cols) { return cols == 1 ? Make<1>(type) : Make<4>(type); }

}  // namespace valet::scalar
