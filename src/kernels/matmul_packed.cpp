#include "kernels/matmul_packed.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/packed_blocks.h"

namespace valet {
namespace {

// Tokens per pass over a thread's row groups: their activations (64 x n_in
// x 1.25 bytes at most) stay in L2 while each group's blocks stay in L1 across them.
constexpr int64_t kChunkTokens = 64;
// Up to this many tokens the caller converts the activations alone: waking
// the pool costs more than the work (decode).
constexpr int64_t kInlineConvertTokens = 4;

// What the row-group kernels of a type read: BlockQ8_0S rows (the 32-element
// types), or the table's Q8_K rows (the super-block types).
struct ActFormat {
  int64_t block;      // elements per activation block
  size_t block_bytes;
  bool q8_0s;
};

ActFormat ActFormatFor(GgmlType type) {
  if (type == GgmlType::kQ4_K || type == GgmlType::kQ6_K) return {kQK_K, sizeof(BlockQ8_K), false};
  return {kQK8_0, sizeof(BlockQ8_0S), true};
}

struct PackedJob {
  const WeightMatrix* w;
  const float* x;  // [n_tokens][n_in]
  int64_t n_tokens;
  float* y;  // [n_tokens][n_out]
  ActFormat format;
  from_float_fn quantize;  // Q8_0 (then widened to BlockQ8_0S) or Q8_K
  uint8_t* act;            // [n_tokens][n_in / format.block] activation blocks
  TileKernel gemm;
  TileKernel gemv;
};

// Blocks [begin, end) of one activation row: the table's Q8_0 quantization,
// then the widened scale and the quant sum.
void ConvertBlocks(from_float_fn q8_0, const float* x, BlockQ8_0S* out, int64_t begin, int64_t end) {
  for (int64_t l = begin; l < end; ++l) {
    BlockQ8_0 b;
    q8_0(x + l * kQK8_0, &b, kQK8_0);
    BlockQ8_0S& s = out[l];
    s.d = Fp16ToFp32(b.d);
    int32_t sum = 0;
    for (int8_t q : b.qs) sum += q;
    s.sum = sum;
    std::memcpy(s.qs, b.qs, sizeof(s.qs));
  }
}

// Each thread converts the same block range of every row, so short batches split evenly.
void RunConvert(const PackedJob& job, int ith, int nth) {
  const ActFormat& f = job.format;
  const int64_t n_in = job.w->n_in, nb = n_in / f.block;
  const Range r = SplitRange(nb, ith, nth);
  if (r.begin >= r.end) return;
  for (int64_t t = 0; t < job.n_tokens; ++t) {
    uint8_t* row = job.act + static_cast<size_t>(t * nb) * f.block_bytes;
    const float* x = job.x + t * n_in;
    if (f.q8_0s) {
      ConvertBlocks(job.quantize, x, reinterpret_cast<BlockQ8_0S*>(row), r.begin, r.end);
    } else {
      job.quantize(x + r.begin * f.block, row + static_cast<size_t>(r.begin) * f.block_bytes,
                   (r.end - r.begin) * f.block);
    }
  }
}

// Threads split whole row groups; within a group every token goes through a
// kernel with the same per-output operations, tile or tail alike.
void RunGroups(const PackedJob& job, int ith, int nth) {
  const WeightMatrix& w = *job.w;
  const size_t ldy = static_cast<size_t>(w.n_in / job.format.block) * job.format.block_bytes;
  const size_t group_bytes = kPackRows * w.row_bytes;
  const Range groups = SplitRange(w.n_out / kPackRows, ith, nth);
  const int64_t cols = job.gemm.cols;
  for (int64_t t0 = 0; t0 < job.n_tokens; t0 += kChunkTokens) {
    const int64_t t1 = std::min(job.n_tokens, t0 + kChunkTokens);
    for (int64_t g = groups.begin; g < groups.end; ++g) {
      const uint8_t* wg = static_cast<const uint8_t*>(w.data) + g * group_bytes;
      float* yg = job.y + g * kPackRows;
      int64_t t = t0;
      for (; t + cols <= t1; t += cols)
        job.gemm.fn(w.n_in, wg, 0, job.act + t * ldy, ldy, yg + t * w.n_out, w.n_out);
      for (; t < t1; ++t) job.gemv.fn(w.n_in, wg, 0, job.act + t * ldy, ldy, yg + t * w.n_out, w.n_out);
    }
  }
}

}  // namespace

void MatMulPacked(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& pool, MatMulScratch& scratch, const KernelTable& table) {
  assert(w.layout == WeightLayout::kRowGroups && w.n_out % kPackRows == 0);
  const TypeKernels& k =
      table[w.type].packed_gemm.fn != nullptr ? table[w.type] : ScalarKernels()[w.type];
  const ActFormat format = ActFormatFor(w.type);
  const size_t need = static_cast<size_t>(n_tokens * (w.n_in / format.block)) * format.block_bytes;
  if (scratch.activations.size() < need) scratch.activations.resize(need);
  const GgmlType act_type = format.q8_0s ? GgmlType::kQ8_0 : GgmlType::kQ8_K;
  const PackedJob job{&w,
                      x,
                      n_tokens,
                      y,
                      format,
                      table[act_type].from_float,
                      scratch.activations.data(),
                      k.packed_gemm,
                      k.packed_gemv};
  if (n_tokens <= kInlineConvertTokens) {
    RunConvert(job, 0, 1);
  } else {
    pool.Run([&job](int ith, int nth) { RunConvert(job, ith, nth); });
  }
  pool.Run([&job](int ith, int nth) { RunGroups(job, ith, nth); });
}

}  // namespace valet
