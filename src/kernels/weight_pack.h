// Repacking weight matrices into row groups (packed_blocks.h) at load time.
//
// A packed matrix replaces its row-major original for MatMul: the model keeps
// one copy, not both. Packing needs whole row groups (n_out % kPackRows == 0)
// of a quantized type (every one valet reads: Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL,
// Q8_0, Q2_K..Q6_K, IQ4_XS); float matrices stay rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace valet {

// The row-group layout's version: bumped whenever a packer's output changes,
// so weights caches (model/weights_cache.h) written before are rebuilt.
inline constexpr uint32_t kPackFormat = 1;

// True when w is row-major and dense and its type and row count allow a
// row-group layout.
bool CanPack(const WeightMatrix& w);
// Bytes PackWeights writes for w: the rows it replaces (Q3_K, Q4_K, Q5_K: 4 bytes more per
// row and super-block, its scales unpacked).
size_t PackedBytes(const WeightMatrix& w);
// Writes w (CanPack(w)) as row groups into dst and returns the matrix viewing dst.
WeightMatrix PackWeights(const WeightMatrix& w, void* dst);
// The matrix viewing row groups PackWeights wrote for w, wherever they are now
// (a weights cache's mapping).
WeightMatrix PackedView(const WeightMatrix& w, const void* packed);

}  // namespace valet
