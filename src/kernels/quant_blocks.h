// Quantized block layouts exactly as GGUF files (and llama.cpp) store them.
// Every field is little-endian; fp16 fields are raw IEEE half bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace valet {

inline constexpr int kQK8_0 = 32;
inline constexpr int kQK4_0 = 32;
inline constexpr int kQK_K = 256;  // super-block length of the K-quants
inline constexpr int kK_ScaleBytes = 12;  // Q4_K: 8 six-bit scales + 8 six-bit mins

// value[i] = qs[i] * d
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34, "block_q8_0 is 34 bytes");

// Byte j holds element j (low nibble) and element j + 16 (high nibble);
// value = (nibble - 8) * d.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 18, "block_q4_0 is 18 bytes");

// Byte j holds element j (low nibble) and element j + 16 (high nibble);
// value = nibble * d + m.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20, "block_q4_1 is 20 bytes");

// Nibbles as in Q4_0; bit j of the little-endian 32-bit qh is the fifth bit of
// element j: value = (q - 16) * d.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ5_0) == 22, "block_q5_0 is 22 bytes");

// The 5-bit quants of Q5_0 with an offset instead of a centre: value = q * d + m.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ5_1) == 24, "block_q5_1 is 24 bytes");

// Activation-only type for Q4_1/Q5_1: Q8_0 plus s = d * sum(qs) (fp16), which
// folds the weights' offsets m into one multiply per block.
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_1) == 36, "block_q8_1 is 36 bytes");

// Nibbles as in Q4_0, each an index into the non-linear kIQ4NLValues:
// value = kIQ4NLValues[nibble] * d.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18, "block_iq4_nl is 18 bytes");

// The 16 levels of IQ4_NL and IQ4_XS (denser near zero, where weights cluster).
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// 8 sub-blocks of 32. Sub-block j has a 6-bit scale sc_j and min m_j packed in
// `scales`: value = d * sc_j * q - dmin * m_j with q a 4-bit nibble. Each 32
// bytes of qs serve 64 elements: low nibbles the first 32, high nibbles the next.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kK_ScaleBytes];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144, "block_q4_K is 144 bytes");

// 6-bit quants split into 4 low bits (ql) and 2 high bits (qh), 16 groups of 16
// with an int8 scale each: value = d * scales[g] * (q - 32).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210, "block_q6_K is 210 bytes");

// Activation-only type for the K-quant dot products; bsums[g] is the sum of
// qs[16g .. 16g+15], which lets a dot product fold in mins/offsets cheaply.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292, "block_q8_K is 292 bytes");

// Scale and min of sub-block j (0..7) of a Q4_K block's packed 12 bytes:
// bytes 0-3 hold scales 0-3 (low 6 bits), bytes 4-7 mins 0-3; bytes 8-11 hold
// the low 4 bits of scale/min 4-7, whose top 2 bits sit in bits 6-7 of bytes 0-7.
inline void UnpackQ4KScaleMin(const uint8_t* s, int j, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// The inverse of UnpackQ4KScaleMin for all 8 sub-blocks (ls, lm < 64).
inline void PackQ4KScales(const uint8_t* ls, const uint8_t* lm, uint8_t* s) {
  for (int j = 0; j < kK_ScaleBytes; ++j) s[j] = 0;
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

}  // namespace valet
