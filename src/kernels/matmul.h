// The matrix product the forward pass calls, and the embedding row lookup.
//
// Shapes (row-major, GGUF naming in brackets):
//   W  [n_out rows][n_in]   (ne[0] = n_in is the contiguous row, ne[1] = n_out)
//   x  [n_tokens][n_in]     f32 activations, one token per row
//   y  [n_tokens][n_out]    f32, y = x · Wᵀ, i.e. y[t][r] = dot(W row r, x row t)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/cache_aligned.h"
#include "common/thread_pool.h"
#include "gguf/ggml_type.h"
#include "kernels/kernel_table.h"

namespace valet {

enum class WeightLayout {
  kRows,       // row-major, as the file stores it
  kRowGroups,  // groups of kPackRows rows interleaved block by block (kernels/weight_pack.h)
};

struct WeightMatrix {
  GgmlType type = GgmlType::kF32;
  int64_t n_in = 0;   // row length, ne[0]
  int64_t n_out = 0;  // rows, ne[1]
  const void* data = nullptr;
  size_t row_bytes = 0;  // stride between rows (GgmlRowSize(type, n_in) for dense tensors)
  // kRowGroups: group g (rows 8g..8g+7) starts at data + 8g * row_bytes
  // (row_bytes then being an eighth of a group's bytes), and single rows have
  // no address of their own.
  WeightLayout layout = WeightLayout::kRows;

  const void* Row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * static_cast<int64_t>(row_bytes); }
  // Rows [first, first + count) as a matrix of their own (a fused tensor's
  // parts); for row groups, first and count are whole groups.
  WeightMatrix Rows(int64_t first, int64_t count) const {
    return WeightMatrix{type, n_in, count, Row(first), row_bytes, layout};
  }
};

// Per-caller reusable buffers: once grown to the largest shape seen, MatMul
// allocates nothing. Not shareable between concurrent MatMul calls.
struct MatMulScratch {
  CacheAlignedVector<uint8_t> activations;  // x converted to the weight's vec_dot type
  std::vector<float> dequantized;           // W as f32 for the BLAS path
};

enum class MatMulBackend {
  kAuto,    // BLAS when available and n_tokens >= BlasMinTokens(type), native otherwise
  kNative,  // the kernel table's vec_dot, always
  kBlas,    // dequantize W to f32 and call sgemm (falls back to native without BLAS)
};

struct MatMulOptions {
  MatMulBackend backend = MatMulBackend::kAuto;
  const KernelTable* kernels = nullptr;  // nullptr: ActiveKernels()
};

// n_in must be a multiple of the block sizes of w.type and of its vec_dot type,
// and w.type must have kernels (KernelTable::SupportsWeight).
void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatMulScratch& scratch);
void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatMulScratch& scratch, const MatMulOptions& options);

// One product of MatMulMany: y = x · wᵀ.
struct MatMulOutput {
  const WeightMatrix* w = nullptr;
  float* y = nullptr;
};

// Work MatMulMany runs on a thread once it has computed rows [rows.begin,
// rows.end) of every output for tokens [tokens.begin, tokens.end):
// fn(ctx, tokens, rows), each (token, row) exactly once. A long batch calls it
// per chunk of tokens, while the chunk's outputs are still in the thread's
// cache. A plain function and context, so a call allocates nothing.
struct RowsEpilogue {
  void (*fn)(void* ctx, Range tokens, Range rows) = nullptr;
  void* ctx = nullptr;
};

// The products of one activation matrix with several weights of the same n_in
// (Q, K and V; gate and up), each y bit for bit what MatMul writes. Where the
// weights allow it (row groups of one activation format) x is converted once
// and all products run as one pool job: a decode step issues dozens of small
// products, and each job costs a wake-up and a barrier. With an epilogue,
// every w has the same n_out and a thread's epilogue rows are the rows it
// computed of every output, so element-wise work on them (SwiGLU) needs no
// job of its own.
void MatMulMany(std::span<const MatMulOutput> outs, const float* x, int64_t n_tokens, ThreadPool& pool,
                MatMulScratch& scratch, const RowsEpilogue& epilogue = {},
                const MatMulOptions& options = {});

// True when this build links a BLAS for the large-batch path.
bool BlasAvailable();
// Smallest n_tokens for which kAuto uses BLAS for weights of `type` (measured;
// INT64_MAX when native always wins or BLAS is absent).
int64_t BlasMinTokens(GgmlType type);

// out[i][*] = dequantized row ids[i] of w (out is [ids.size()][n_in]). Every id
// must be in [0, n_out), and w row-major.
void GetRows(const WeightMatrix& w, std::span<const int32_t> ids, float* out);

}  // namespace valet
