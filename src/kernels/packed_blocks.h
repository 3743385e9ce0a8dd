// Weight blocks repacked into row groups, and the activation blocks their
// kernels read (kernels/weight_pack.h does the repacking). The K-quant groups
// read Q8_K activation rows as they are.
//
// A row group interleaves the blocks of kPackRows = 8 consecutive weight rows
// at the same position along the row, 4 bytes of quants per row in turn, so
// one 32-byte load holds 4 quants of each of the 8 rows: an int8 product with
// one broadcast 4-byte activation group yields the 8 rows' partial dots in the
// 8 int32 lanes of a vector, and the per-block float update of 8 outputs is
// one multiply-add. Rows r of the group are lanes r of every vector.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_blocks_k.h"

namespace valet {

inline constexpr int kPackRows = 8;

// The Q4_0 blocks of 8 rows at one position. d[r] is row r's scale; 32-byte
// chunk m (0..3) holds bytes 4m..4m+3 of each row's Q4_0 qs in row order:
// qs[32 * m + 4 * r + b] = row r's qs[4 * m + b] (low nibble element 4m + b,
// high nibble element 16 + 4m + b).
struct BlockQ4_0x8 {
  uint16_t d[kPackRows];
  uint8_t qs[kPackRows * kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_0x8) == kPackRows * sizeof(BlockQ4_0), "8 Q4_0 blocks, repacked");

// The Q8_0 blocks of 8 rows at one position: qs[32 * m + 4 * r + b] = row r's
// qs[4 * m + b] for chunks m = 0..7.
struct BlockQ8_0x8 {
  uint16_t d[kPackRows];
  int8_t qs[kPackRows * kQK8_0];
};
static_assert(sizeof(BlockQ8_0x8) == kPackRows * sizeof(BlockQ8_0), "8 Q8_0 blocks, repacked");

// The other 32-element types take BlockQ4_0x8's layout: d[r] (and m[r], the
// offset of Q4_1 and Q5_1) row r's, qs[32 * m + 4 * r + b] = row r's qs[4 * m
// + b]. IQ4_NL's nibbles index kIQ4NLValues. Q5_0 and Q5_1 regroup the 5th
// bits so that byte 4r + b of qh serves the 8 elements of row r that share
// qs byte offset b: bit m (0..3) is the high bit of element 4m + b, bit 4 + m
// that of element 16 + 4m + b; chunk m's high bits are then (qh >> m) & 1 and
// (qh >> (4 + m)) & 1, one shift and mask of one 32-byte load.
struct BlockQ4_1x8 {
  uint16_t d[kPackRows];
  uint16_t m[kPackRows];
  uint8_t qs[kPackRows * kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_1x8) == kPackRows * sizeof(BlockQ4_1), "8 Q4_1 blocks, repacked");

struct BlockQ5_0x8 {
  uint16_t d[kPackRows];
  uint8_t qh[kPackRows * 4];
  uint8_t qs[kPackRows * kQK4_0 / 2];
};
static_assert(sizeof(BlockQ5_0x8) == kPackRows * sizeof(BlockQ5_0), "8 Q5_0 blocks, repacked");

struct BlockQ5_1x8 {
  uint16_t d[kPackRows];
  uint16_t m[kPackRows];
  uint8_t qh[kPackRows * 4];
  uint8_t qs[kPackRows * kQK4_0 / 2];
};
static_assert(sizeof(BlockQ5_1x8) == kPackRows * sizeof(BlockQ5_1), "8 Q5_1 blocks, repacked");

struct BlockIQ4_NLx8 {
  uint16_t d[kPackRows];
  uint8_t qs[kPackRows * kQK4_0 / 2];
};
static_assert(sizeof(BlockIQ4_NLx8) == kPackRows * sizeof(BlockIQ4_NL), "8 IQ4_NL blocks, repacked");

// The Q4_K super-blocks of 8 rows at one position, scales and mins unpacked
// from their 6-bit fields (32 bytes more than 8 Q4_K blocks, +2.8%, so that a
// sub-block's 8 scales are one load). sc[8 * j + r] is row r's scale of
// sub-block j; mins[16 * k + 2 * r + i] row r's min of sub-block 2k + i.
// 256-byte chunk c (0..3) holds row r's qs[32c .. 32c + 31] (low nibbles
// sub-block 2c, high nibbles 2c + 1) interleaved 4 bytes at a time:
// qs[256 * c + 32 * m + 4 * r + b] = row r's qs[32 * c + 4 * m + b].
struct BlockQ4_Kx8 {
  uint16_t d[kPackRows];
  uint16_t dmin[kPackRows];
  uint8_t sc[8 * kPackRows];
  uint8_t mins[8 * kPackRows];
  uint8_t qs[kPackRows * kQK_K / 2];
};
static_assert(sizeof(BlockQ4_Kx8) == kPackRows * sizeof(BlockQ4_K) + 4 * kPackRows,
              "8 Q4_K blocks, repacked with unpacked scales");

// The Q5_K super-blocks of 8 rows at one position: BlockQ4_Kx8's fields for
// the scales, mins and low 4 bits, then the 5th bits interleaved as the
// quants are: qh[32 * m + 4 * r + b] = row r's qh[4 * m + b], whose bit s is
// the high bit of element 32s + 4m + b.
struct BlockQ5_Kx8 {
  uint16_t d[kPackRows];
  uint16_t dmin[kPackRows];
  uint8_t sc[8 * kPackRows];
  uint8_t mins[8 * kPackRows];
  uint8_t qh[kPackRows * kQK_K / 8];
  uint8_t qs[kPackRows * kQK_K / 2];
};
static_assert(sizeof(BlockQ5_Kx8) == kPackRows * sizeof(BlockQ5_K) + 4 * kPackRows,
              "8 Q5_K blocks, repacked with unpacked scales");

// The IQ4_XS super-blocks of 8 rows at one position, scales unpacked to
// signed bytes (2 bytes more per row than IQ4_XS, +1.5%). Sub-block s
// (elements 32s..32s+31) is laid out as a BlockQ4_0x8's quants:
// qs[128 * s + 32 * m + 4 * r + b] = row r's qs[16 * s + 4 * m + b] (low
// nibble element 32s + 4m + b, high nibble 32s + 16 + 4m + b), each nibble an
// index into kIQ4NLValues. sc[8 * s + r] is row r's scale (less 32) of sub-block s.
struct BlockIQ4_XSx8 {
  uint16_t d[kPackRows];
  int8_t sc[8 * kPackRows];
  uint8_t qs[kPackRows * kQK_K / 2];
};
static_assert(sizeof(BlockIQ4_XSx8) == kPackRows * sizeof(BlockIQ4_XS) + 2 * kPackRows,
              "8 IQ4_XS blocks, repacked with unpacked scales");

// The Q2_K super-blocks of 8 rows at one position, the same bytes as 8 Q2_K
// blocks. Sub-block s's 2-bit quants are read from 32-byte chunks m (0..7),
// row r's byte b of qs[256 * (s / 4) + 32 * m + 4 * r + b] holding element
// 32s + 4m + b in bits 2 (s % 4) .. 2 (s % 4) + 1; sc[16 * s + 2 * r + i] is
// row r's scales byte of group 2s + i (scale in the low nibble, min in the high).
struct BlockQ2_Kx8 {
  uint16_t d[kPackRows];
  uint16_t dmin[kPackRows];
  uint8_t sc[16 * kPackRows];
  uint8_t qs[kPackRows * kQK_K / 4];
};
static_assert(sizeof(BlockQ2_Kx8) == kPackRows * sizeof(BlockQ2_K), "8 Q2_K blocks, repacked");

// The Q3_K super-blocks of 8 rows at one position, scales unpacked to signed
// bytes (32 bytes more than 8 Q3_K blocks). Sub-block s (elements
// 32s..32s+31) is read from 32-byte chunks m (0..7), each 4 elements of every
// row: row r's byte b of
//   qs[256 * (s / 4) + 32 * m + 4 * r + b]: the low 2 bits of element
//     32s + 4m + b in bits 2 (s % 4) .. 2 (s % 4) + 1;
//   hmask[32 * m + 4 * r + b]: its high bit in bit s.
// The quant is low | high << 2, less 4. sc[16 * s + 2 * r + i] is row r's
// scale (less 32) of group 2s + i (16 elements).
struct BlockQ3_Kx8 {
  uint16_t d[kPackRows];
  int8_t sc[16 * kPackRows];
  uint8_t hmask[kPackRows * kQK_K / 8];
  uint8_t qs[kPackRows * kQK_K / 4];
};
static_assert(sizeof(BlockQ3_Kx8) == kPackRows * sizeof(BlockQ3_K) + 4 * kPackRows,
              "8 Q3_K blocks, repacked with unpacked scales");

// The Q6_K super-blocks of 8 rows at one position, the same bytes as 8 Q6_K
// blocks. u(e) = q(e) + 32 in 0..63 is element e's 6-bit quant; sub-block s
// (elements 32s..32s+31) is read from 32-byte chunks m (0..7), each 4
// elements of every row: row r's byte b of
//   ql[256 * (s / 2) + 32 * m + 4 * r + b]: u(32s + 4m + b) & 15 in the low
//     nibble for even s, the high nibble for odd s;
//   qh[256 * (s / 4) + 32 * m + 4 * r + b]: u(32s + 4m + b) >> 4 in bits
//     2 (s % 4) .. 2 (s % 4) + 1.
// sc[16 * s + 2 * r + i] is row r's scale of group 2s + i (16 elements).
struct BlockQ6_Kx8 {
  uint16_t d[kPackRows];
  int8_t sc[16 * kPackRows];
  uint8_t ql[kPackRows * kQK_K / 2];
  uint8_t qh[kPackRows * kQK_K / 4];
};
static_assert(sizeof(BlockQ6_Kx8) == kPackRows * sizeof(BlockQ6_K), "8 Q6_K blocks, repacked");

// An activation block for the row-group kernels: the Q8_0 block of the same
// 32 floats (same quants, same fp16-rounded scale) with the scale widened once
// and the sum of the quants precomputed, which folds a 4-bit weight's offset
// out of its unsigned product with one subtraction per block.
struct BlockQ8_0S {
  float d;
  int32_t sum;
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0S) == 40, "block_q8_0s is 40 bytes");

// n_blocks BlockQ8_0S from x through a Q8_0 quantizer (a table's kQ8_0
// from_float): what KernelTable::q8_0s_from_float computes in one pass.
inline void WidenQ8_0Blocks(void (*q8_0)(const float*, void*, int64_t), const float* x, BlockQ8_0S* out,
                            int64_t n_blocks) {
  for (int64_t l = 0; l < n_blocks; ++l) {
    BlockQ8_0 b;
    q8_0(x + l * kQK8_0, &b, kQK8_0);
    out[l].d = Fp16ToFp32(b.d);
    int32_t sum = 0;
    for (int8_t q : b.qs) sum += q;
    out[l].sum = sum;
    std::memcpy(out[l].qs, b.qs, sizeof(b.qs));
  }
}

// The activation block of Q4_1 and Q5_1 row groups: the Q8_1 block of the
// same 32 floats, d and s (fp16 in Q8_1, so the offset term equals the row
// path's m * s) widened once.
struct BlockQ8_1S {
  float d;
  float s;
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_1S) == 40, "block_q8_1s is 40 bytes");

}  // namespace valet
