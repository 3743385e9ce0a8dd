// Internal: MatMul's path for WeightLayout::kRowGroups matrices.
#pragma once

#include "kernels/matmul.h"

namespace valet {

// y = x · Wᵀ for a row-group matrix (shapes as in matmul.h). Uses the table's
// row-group kernels, or the scalar table's when it has none for w.type.
// Each output y[t][r] depends only on x row t and W row r: the same bits
// whatever the batch, the token's place in it and the thread count.
void MatMulPacked(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& pool, MatMulScratch& scratch, const KernelTable& table);

}  // namespace valet
