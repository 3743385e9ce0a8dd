// Internal: MatMul's path for WeightLayout::kRowGroups matrices.
#pragma once

#include <span>

#include "kernels/matmul.h"

namespace valet {

// True when MatMulPacked can run these products as one job: every w in row
// groups, of one n_in, and of one activation format (Q8_0/Q4_0 read Q8_0
// blocks, Q4_K/Q6_K Q8_K blocks); with an epilogue also of one n_out.
bool CanRunPackedTogether(std::span<const MatMulOutput> outs, bool epilogue);

// y = x · Wᵀ for each output (shapes as in matmul.h; CanRunPackedTogether):
// x converted once, one pool job for all. Uses the table's row-group kernels,
// or the scalar table's when it has none for a type. Each output y[t][r]
// depends only on x row t and W row r: the same bits whatever the batch, the
// token's place in it, the other outputs and the thread count.
void MatMulPacked(std::span<const MatMulOutput> outs, const float* x, int64_t n_tokens,
                  ThreadPool& pool, MatMulScratch& scratch, const KernelTable& table,
                  const RowsEpilogue& epilogue);

}  // namespace valet
