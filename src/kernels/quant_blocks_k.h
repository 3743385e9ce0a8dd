// The K-quant and IQ4_XS block layouts beyond Q4_K/Q6_K, exactly as GGUF files
// store them. Within a 128-element half n of a super-block, the 2-bit fields of
// Q2_K/Q3_K are laid out as in llama.cpp: element 128n + 32j + l (j = 0..3,
// l = 0..31) is bits 2j..2j+1 of qs[32n + l] and belongs to group 8n + 2j + l/16.
#pragma once

#include <cstdint>

#include "kernels/quant_blocks.h"

namespace valet {

// 16 groups of 16: scales[g] holds the group's 4-bit scale (low nibble) and
// 4-bit min (high nibble): value = d * (scales[g] & 15) * q - dmin * (scales[g] >> 4).
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84, "block_q2_K is 84 bytes");

// 2 low bits in qs (laid out as Q2_K), the third bit of element 128n + 32j + l
// in bit 4n + j of hmask[l]; a clear bit means the value is 4 lower:
// value = d * (scale_g - 32) * (q2 + 4 * hbit - 4), scale_g a 6-bit field.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[kK_ScaleBytes];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110, "block_q3_K is 110 bytes");

// Q4_K plus a fifth bit: for chunk c of 64 elements, qh[l] bit 2c is the high
// bit of element 64c + l and bit 2c + 1 that of element 64c + 32 + l.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kK_ScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176, "block_q5_K is 176 bytes");

// 8 sub-blocks of 32, each laid out as an IQ4_NL block (16 bytes of nibbles),
// with a 6-bit scale: low 4 bits in scales_l (two per byte), high 2 bits in
// scales_h: value = d * (scale - 32) * kIQ4NLValues[nibble].
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136, "block_iq4_xs is 136 bytes");

// Group g's (0..15) 6-bit scale of a Q3_K block, without the -32 bias: the low
// 4 bits are nibbles of bytes 0-7 (low nibbles for groups 0-7, high for 8-15),
// the top 2 bits are 2-bit fields of bytes 8-11 (field g / 4 of byte 8 + g % 4).
inline int UnpackQ3KScale(const uint8_t* s, int g) {
  const int low = g < 8 ? (s[g] & 0x0f) : (s[g - 8] >> 4);
  const int high = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
  return low | (high << 4);
}

// Sub-block ib's (0..7) 6-bit scale of an IQ4_XS block, without the -32 bias.
inline int UnpackIQ4XSScale(const BlockIQ4_XS& b, int ib) {
  const int low = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f;
  const int high = (b.scales_h >> (2 * ib)) & 3;
  return low | (high << 4);
}

}  // namespace valet
