#include "kernels/matmul.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "kernels/matmul_packed.h"

#if VALET_HAVE_BLAS
#include <cblas.h>
#endif

namespace valet {
namespace {

// Output tiles: a few weight rows against a few tokens, so each weight row is
// fetched from memory once per tile of tokens rather than once per token.
constexpr int64_t kTileRows = 16;
constexpr int64_t kTileTokens = 8;

const KernelTable& TableFor(const MatMulOptions& options) {
  return options.kernels != nullptr ? *options.kernels : ActiveKernels();
}

// Jobs capture one pointer to their context so std::function keeps them in its
// small buffer: MatMul must not allocate once its scratch is warm.
struct ConvertJob {
  const float* x;
  int64_t n_tokens;
  int64_t n_in;
  const GgmlTypeTraits* traits;
  size_t row_bytes;
  from_float_fn convert;
  uint8_t* out;
};

// Each thread converts the same block range of every token row, so short
// batches (decode) still split evenly.
void RunConvert(const ConvertJob& job, int ith, int nth) {
  const Range r = SplitRange(job.n_in / job.traits->block_size, ith, nth);
  if (r.begin >= r.end) return;
  for (int64_t t = 0; t < job.n_tokens; ++t) {
    const float* src = job.x + t * job.n_in + r.begin * job.traits->block_size;
    uint8_t* dst = job.out + static_cast<size_t>(t) * job.row_bytes +
                   static_cast<size_t>(r.begin) * job.traits->type_size;
    job.convert(src, dst, (r.end - r.begin) * job.traits->block_size);
  }
}

struct DotJob {
  const WeightMatrix* w;
  const uint8_t* act;
  size_t act_row_bytes;
  int64_t n_tokens;
  float* y;
  vec_dot_fn dot;
  TileKernel tile;  // fn == nullptr: every pair through vec_dot
};

void DotsPerPair(const DotJob& job, int64_t r0, int64_t r1, int64_t t0, int64_t t1) {
  const WeightMatrix& w = *job.w;
  for (int64_t r = r0; r < r1; ++r) {
    const void* wrow = w.Row(r);
    for (int64_t t = t0; t < t1; ++t) {
      job.y[t * w.n_out + r] =
          job.dot(w.n_in, wrow, job.act + static_cast<size_t>(t) * job.act_row_bytes);
    }
  }
}

// Without a tile kernel: blocks of rows x tokens, so each weight row is
// fetched from memory once per block of tokens rather than once per token.
void RunDotsPerPair(const DotJob& job, int ith, int nth) {
  const Range rows = SplitRange(job.w->n_out, ith, nth);
  for (int64_t r0 = rows.begin; r0 < rows.end; r0 += kTileRows) {
    const int64_t r1 = std::min(rows.end, r0 + kTileRows);
    for (int64_t t0 = 0; t0 < job.n_tokens; t0 += kTileTokens) {
      DotsPerPair(job, r0, r1, t0, std::min(job.n_tokens, t0 + kTileTokens));
    }
  }
}

// Threads split whole row tiles, so which pairs a tile computes and which are
// left over for vec_dot (the last n_out % rows rows, n_tokens % cols tokens)
// does not depend on the thread count, and neither do the results.
void RunTiles(const DotJob& job, int ith, int nth) {
  const WeightMatrix& w = *job.w;
  const TileKernel& tile = job.tile;
  const int64_t rm = tile.rows, rn = tile.cols;
  const Range units = SplitRange((w.n_out + rm - 1) / rm, ith, nth);
  const int64_t r_begin = units.begin * rm;
  const int64_t r_end = std::min(w.n_out, units.end * rm);
  const int64_t t_full = job.n_tokens / rn * rn;
  int64_t r = r_begin;
  for (; r + rm <= r_end; r += rm) {
    for (int64_t t = 0; t < t_full; t += rn) {
      tile.fn(w.n_in, w.Row(r), w.row_bytes, job.act + static_cast<size_t>(t) * job.act_row_bytes,
              job.act_row_bytes, job.y + t * w.n_out + r, w.n_out);
    }
    DotsPerPair(job, r, r + rm, t_full, job.n_tokens);
  }
  DotsPerPair(job, r, r_end, 0, job.n_tokens);
}

void RunDots(const DotJob& job, int ith, int nth) {
  if (job.tile.fn != nullptr) {
    RunTiles(job, ith, nth);
  } else {
    RunDotsPerPair(job, ith, nth);
  }
}

// Decode uses the row-only tile; a batch narrower than the wide tile runs the
// row-only tile once per token rather than leaving every pair to vec_dot.
TileKernel ChooseTile(const TypeKernels& k, int64_t n_tokens) {
  if (n_tokens >= 2 && k.gemm.fn != nullptr && n_tokens >= k.gemm.cols) return k.gemm;
  return k.gemv;
}

void MatMulNative(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& pool, MatMulScratch& scratch, const KernelTable& table) {
  const TypeKernels& k = table[w.type];
  const GgmlType vdt = k.vec_dot_type;
  const size_t act_row_bytes = GgmlRowSize(vdt, w.n_in);
  const uint8_t* act = reinterpret_cast<const uint8_t*>(x);
  if (vdt != GgmlType::kF32) {
    const size_t need = act_row_bytes * static_cast<size_t>(n_tokens);
    if (scratch.activations.size() < need) scratch.activations.resize(need);
    const ConvertJob job{x,
                         n_tokens,
                         w.n_in,
                         &GetGgmlTypeTraits(vdt),
                         act_row_bytes,
                         table[vdt].from_float,
                         scratch.activations.data()};
    pool.Run([&job](int ith, int nth) { RunConvert(job, ith, nth); });
    act = scratch.activations.data();
  }
  const DotJob job{&w, act, act_row_bytes, n_tokens, y, k.vec_dot, ChooseTile(k, n_tokens)};
  pool.Run([&job](int ith, int nth) { RunDots(job, ith, nth); });
}

#if VALET_HAVE_BLAS
void MatMulBlas(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
                MatMulScratch& scratch, const KernelTable& table) {
  const float* wf = static_cast<const float*>(w.data);
  int64_t ldw = static_cast<int64_t>(w.row_bytes / sizeof(float));
  if (w.type != GgmlType::kF32) {
    const size_t need = static_cast<size_t>(w.n_out * w.n_in);
    if (scratch.dequantized.size() < need) scratch.dequantized.resize(need);
    float* out = scratch.dequantized.data();
    struct DequantJob {
      const WeightMatrix* w;
      to_float_fn to_float;
      float* out;
    } job{&w, table[w.type].to_float, out};
    pool.Run([&job](int ith, int nth) {
      const Range r = SplitRange(job.w->n_out, ith, nth);
      for (int64_t i = r.begin; i < r.end; ++i)
        job.to_float(job.w->Row(i), job.out + i * job.w->n_in, job.w->n_in);
    });
    wf = out;
    ldw = w.n_in;
  }
  openblas_set_num_threads(pool.size());
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n_tokens),
              static_cast<int>(w.n_out), static_cast<int>(w.n_in), 1.0f, x,
              static_cast<int>(w.n_in), wf, static_cast<int>(ldw), 0.0f, y,
              static_cast<int>(w.n_out));
}
#endif

bool UseBlas(const WeightMatrix& w, int64_t n_tokens, MatMulBackend backend) {
  if (!BlasAvailable()) return false;
  switch (backend) {
    case MatMulBackend::kNative:
      return false;
    case MatMulBackend::kBlas:
      return true;
    case MatMulBackend::kAuto:
      return n_tokens >= BlasMinTokens(w.type);
  }
  return false;
}

}  // namespace

bool BlasAvailable() {
#if VALET_HAVE_BLAS
  return true;
#else
  return false;
#endif
}

// Measured with
//   build/bench/valet_kernels_bench --benchmark_filter='BM_MatMulBackend/0/' --benchmark_min_time=0.2
// (f32 weights, n_in 2048, 2 threads, OpenBLAS 0.3.21 pthread vs the tiled
// vnni kernels, quiet machine, 2026-11-30). GFLOPS native / BLAS by n_tokens:
//   n_out   8          16         32         64         128        256
//   2048    57.8/20.8  77.2/22.3  80.2/23.8  72.5/22.9  76.0/25.8  66.4/37.5
//   5632    56.5/19.0  68.8/22.4  66.5/27.4  82.3/33.4  77.6/39.2  86.6/51.5
// The tiled kernels beat sgemm at every size up to prefill chunks of 512, and
// for 16-bit and quantized weights dequantizing W to f32 costs more than sgemm
// could save (and the native path keeps llama.cpp's quantized-activation
// numerics), so kAuto never picks BLAS; kBlas stays for these measurements.
int64_t BlasMinTokens(GgmlType type) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  (void)type;
  return kNever;
}

void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatMulScratch& scratch) {
  MatMul(w, x, n_tokens, y, pool, scratch, MatMulOptions{});
}

void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatMulScratch& scratch, const MatMulOptions& options) {
  const KernelTable& table = TableFor(options);
  assert(table.SupportsWeight(w.type) && "MatMul on a weight type without kernels");
  if (n_tokens <= 0 || w.n_out <= 0) return;
  if (w.layout == WeightLayout::kRowGroups) {
    const MatMulOutput out{&w, y};
    MatMulPacked({&out, 1}, x, n_tokens, pool, scratch, table, RowsEpilogue{});
    return;
  }
#if VALET_HAVE_BLAS
  if (UseBlas(w, n_tokens, options.backend)) {
    MatMulBlas(w, x, n_tokens, y, pool, scratch, table);
    return;
  }
#else
  (void)UseBlas;
#endif
  MatMulNative(w, x, n_tokens, y, pool, scratch, table);
}

void MatMulMany(std::span<const MatMulOutput> outs, const float* x, int64_t n_tokens, ThreadPool& pool,
                MatMulScratch& scratch, const RowsEpilogue& epilogue, const MatMulOptions& options) {
  if (n_tokens <= 0 || outs.empty()) return;
  const bool with_epilogue = epilogue.fn != nullptr;
  if (CanRunPackedTogether(outs, with_epilogue)) {
    MatMulPacked(outs, x, n_tokens, pool, scratch, TableFor(options), epilogue);
    return;
  }
  for (const MatMulOutput& o : outs) MatMul(*o.w, x, n_tokens, o.y, pool, scratch, options);
  if (!with_epilogue) return;
  const int64_t n_out = outs[0].w->n_out;
  assert(std::all_of(outs.begin(), outs.end(), [n_out](const MatMulOutput& o) { return o.w->n_out == n_out; }));
  pool.Run([&epilogue, n_out, n_tokens](int ith, int nth) {
    const Range r = SplitRange(n_out, ith, nth);
    if (r.begin < r.end) epilogue.fn(epilogue.ctx, Range{0, n_tokens}, r);
  });
}

void GetRows(const WeightMatrix& w, std::span<const int32_t> ids, float* out) {
  const to_float_fn to_float = ActiveKernels()[w.type].to_float;
  assert(to_float != nullptr && "GetRows on a type without a dequantizer");
  assert(w.layout == WeightLayout::kRows && "GetRows on a row-group matrix");
  for (size_t i = 0; i < ids.size(); ++i) {
    assert(ids[i] >= 0 && ids[i] < w.n_out && "GetRows id out of range");
    to_float(w.Row(ids[i]), out + static_cast<int64_t>(i) * w.n_in, w.n_in);
  }
}

}  // namespace valet
