// Kernel micro-benchmarks: vec_dot per type (scalar vs AVX2), MatMul as GEMV
// (n_tokens = 1) and GEMM (n_tokens = 64), and the native-vs-BLAS crossover
// used to pick BlasMinTokens (BM_MatMulBackend).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "common/cache_aligned.h"
#include "kernels/attention.h"
#include "kernels/kernel_table.h"
#include "kernels/matmul.h"
#include "kernels/weight_pack.h"

namespace valet {
namespace {

constexpr GgmlType kTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,   GgmlType::kQ4_0,
    GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kIQ4_NL, GgmlType::kQ2_K,
    GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,   GgmlType::kIQ4_XS};

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<uint8_t> Encode(GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> out(GgmlRowSize(type, static_cast<int64_t>(x.size())));
  ScalarKernels()[type].from_float(x.data(), out.data(), static_cast<int64_t>(x.size()));
  return out;
}

// args: type id, 0 = scalar / 1 = avx2
void BM_VecDot(benchmark::State& state) {
  const auto type = static_cast<GgmlType>(state.range(0));
  const KernelTable* table = state.range(1) == 0 ? &ScalarKernels() : Avx2Kernels();
  if (table == nullptr) {
    state.SkipWithError("no AVX2");
    return;
  }
  const int64_t n = 4096;
  const auto w = Encode(type, Random(n, 1));
  const auto a = Encode((*table)[type].vec_dot_type, Random(n, 2));
  const vec_dot_fn dot = (*table)[type].vec_dot;
  for (auto _ : state) benchmark::DoNotOptimize(dot(n, w.data(), a.data()));
  state.SetLabel(std::string(GgmlTypeName(type)) + "/" + table->name);
  state.SetItemsProcessed(state.iterations() * n);
}

void VecDotArgs(benchmark::internal::Benchmark* b) {
  for (GgmlType t : kTypes) {
    for (int simd = 0; simd < 2; ++simd) b->Args({static_cast<int64_t>(t), simd});
  }
}
BENCHMARK(BM_VecDot)->Apply(VecDotArgs);

// One thread, one tile kernel over rows that stay in L1/L2: the compute
// ceiling of the tile, insensitive to thread scheduling on a loaded machine.
// args: type id, table (0 scalar, 1 avx2, 2 vnni, 3 avx512vnni, 4 avx512bf16), 0 = gemm / 1 = gemv.
void BM_Tile(benchmark::State& state) {
  const auto type = static_cast<GgmlType>(state.range(0));
  const KernelTable* tables[] = {&ScalarKernels(), Avx2Kernels(), AvxVnniKernels(), Avx512VnniKernels(),
                                 Avx512Bf16Kernels()};
  const KernelTable* table = tables[state.range(1)];
  if (table == nullptr) {
    state.SkipWithError("table unavailable");
    return;
  }
  const TileKernel tile = state.range(2) == 0 ? (*table)[type].gemm : (*table)[type].gemv;
  if (tile.fn == nullptr) {
    state.SkipWithError("no tile");
    return;
  }
  const int64_t n = 2048;
  const GgmlType vdt = (*table)[type].vec_dot_type;
  const auto w = Encode(type, Random(n * tile.rows, 1));
  const auto a = Encode(vdt, Random(n * tile.cols, 2));
  std::vector<float> out(static_cast<size_t>(tile.rows * tile.cols));
  for (auto _ : state) {
    tile.fn(n, w.data(), GgmlRowSize(type, n), a.data(), GgmlRowSize(vdt, n), out.data(),
            tile.rows);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(std::string(GgmlTypeName(type)) + "/" + table->name + " " +
                 std::to_string(tile.rows) + "x" + std::to_string(tile.cols));
  state.counters["GFLOPS"] = benchmark::Counter(
      2.0 * static_cast<double>(n * tile.rows * tile.cols),
      benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void TileArgs(benchmark::internal::Benchmark* b) {
  for (GgmlType t : kTypes) {
    for (int table = 1; table < 5; ++table) {
      for (int gemv = 0; gemv < 2; ++gemv) b->Args({static_cast<int64_t>(t), table, gemv});
    }
  }
}
BENCHMARK(BM_Tile)->Apply(TileArgs);

// On cache lines, as the engine allocates its weights and activations.
struct Problem {
  CacheAlignedVector<uint8_t> weights;
  CacheAlignedVector<float> x, y;
  WeightMatrix w;
};

Problem MakeProblem(GgmlType type, int64_t n_in, int64_t n_out, int64_t n_tokens) {
  Problem p;
  const std::vector<uint8_t> weights = Encode(type, Random(n_in * n_out, 3));
  const std::vector<float> x = Random(n_in * n_tokens, 4);
  p.weights.assign(weights.begin(), weights.end());
  p.x.assign(x.begin(), x.end());
  p.y.resize(static_cast<size_t>(n_out * n_tokens));
  p.w = WeightMatrix{type, n_in, n_out, p.weights.data(), GgmlRowSize(type, n_in)};
  return p;
}

// Times p's product of n_tokens rows on `threads` threads and reports its
// rate, labelled with the weight type and the active kernel table.
void TimeMatMul(benchmark::State& state, Problem& p, int64_t n_tokens, int threads,
                const MatMulOptions& options = {}) {
  ThreadPool pool(threads);
  MatMulScratch scratch;
  for (auto _ : state) {
    MatMul(p.w, p.x.data(), n_tokens, p.y.data(), pool, scratch, options);
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(GgmlTypeName(p.w.type)) + "/" + ActiveKernelsName());
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * static_cast<double>(p.w.n_in * p.w.n_out * n_tokens),
                                                benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

void RunMatMul(benchmark::State& state, GgmlType type, int64_t n_in, int64_t n_out,
               int64_t n_tokens, MatMulBackend backend, int threads) {
  Problem p = MakeProblem(type, n_in, n_out, n_tokens);
  TimeMatMul(state, p, n_tokens, threads, MatMulOptions{backend, nullptr});
}

// args: type id, n_tokens, threads. 2048x2048, native kernels.
void BM_MatMul(benchmark::State& state) {
  RunMatMul(state, static_cast<GgmlType>(state.range(0)), 2048, 2048, state.range(1),
            MatMulBackend::kNative, static_cast<int>(state.range(2)));
}

void MatMulArgs(benchmark::internal::Benchmark* b) {
  for (GgmlType t : kTypes) {
    for (int64_t tokens : {1, 64}) b->Args({static_cast<int64_t>(t), tokens, 2});
  }
}
BENCHMARK(BM_MatMul)->Apply(MatMulArgs)->UseRealTime();

// args: type id, n_tokens, layout (0 rows, 1 row groups). The bench preset's
// 1024 -> 2816 shape on 1 thread, timed in CPU time so that a loaded machine
// still compares layouts and kernels fairly.
void BM_MatMulLayout(benchmark::State& state) {
  const auto type = static_cast<GgmlType>(state.range(0));
  const int64_t n_in = 1024, n_out = 2816, n_tokens = state.range(1);
  Problem p = MakeProblem(type, n_in, n_out, n_tokens);
  CacheAlignedVector<uint8_t> packed;
  if (state.range(2) == 1) {
    if (!CanPack(p.w)) {
      state.SkipWithError("no row-group layout");
      return;
    }
    packed.resize(PackedBytes(p.w));
    p.w = PackWeights(p.w, packed.data());
  }
  TimeMatMul(state, p, n_tokens, 1);
}

void LayoutArgs(benchmark::internal::Benchmark* b) {
  for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                     GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kIQ4_NL, GgmlType::kQ3_K,
                     GgmlType::kQ2_K, GgmlType::kIQ4_XS}) {
    for (int64_t tokens : {1, 64}) {
      for (int64_t layout : {0, 1}) b->Args({static_cast<int64_t>(t), tokens, layout});
    }
  }
}
BENCHMARK(BM_MatMulLayout)->Apply(LayoutArgs);

// A prefill step's product: the bench preset's 1024 -> 2816 row groups times
// 512 tokens in real time, activation conversion included. Against
// BM_MatMulLayout's 64 tokens it shows what the cache misses of a long step
// cost (its activations and outputs overflow L2). args: type id, threads.
void BM_MatMulPrefill(benchmark::State& state) {
  const auto type = static_cast<GgmlType>(state.range(0));
  const int64_t n_in = 1024, n_out = 2816, n_tokens = 512;
  Problem p = MakeProblem(type, n_in, n_out, n_tokens);
  CacheAlignedVector<uint8_t> packed(PackedBytes(p.w));
  p.w = PackWeights(p.w, packed.data());
  TimeMatMul(state, p, n_tokens, static_cast<int>(state.range(1)));
}

void PrefillArgs(benchmark::internal::Benchmark* b) {
  for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    for (int64_t threads : {1, 2}) b->Args({static_cast<int64_t>(t), threads});
  }
}
BENCHMARK(BM_MatMulPrefill)->Apply(PrefillArgs)->UseRealTime();

// Decode's weight stream: one token through 512 MiB of matrices (3072 ->
// 8192, copies of one matrix), far past the last-level cache, so the rate is
// the GEMV's share of memory bandwidth; compare with build/bench/valet_membw
// at the same thread count. args: type id, threads, layout (0 rows, 1 row groups).
void BM_DecodeStream(benchmark::State& state) {
  const auto type = static_cast<GgmlType>(state.range(0));
  const int64_t n_in = 3072, n_out = 8192;
  Problem p = MakeProblem(type, n_in, n_out, 1);
  CacheAlignedVector<uint8_t> one = p.weights;
  WeightMatrix packed = p.w;
  if (state.range(2) == 1) {
    if (!CanPack(p.w)) {
      state.SkipWithError("no row-group layout");
      return;
    }
    one.resize(PackedBytes(p.w));
    packed = PackWeights(p.w, one.data());
  }
  const size_t copies = (size_t{512} << 20) / one.size();
  CacheAlignedVector<uint8_t> all(copies * one.size());
  std::vector<WeightMatrix> ws(copies, packed);
  for (size_t i = 0; i < copies; ++i) {
    std::copy(one.begin(), one.end(), all.begin() + static_cast<ptrdiff_t>(i * one.size()));
    ws[i].data = all.data() + i * one.size();
  }
  ThreadPool pool(static_cast<int>(state.range(1)));
  MatMulScratch scratch;
  for (auto _ : state) {
    for (const WeightMatrix& w : ws) MatMul(w, p.x.data(), 1, p.y.data(), pool, scratch);
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(GgmlTypeName(type)) + "/" + ActiveKernelsName());
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(all.size()),
                                              benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}

void DecodeStreamArgs(benchmark::internal::Benchmark* b) {
  for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kQ5_0,
                     GgmlType::kQ5_K, GgmlType::kQ3_K, GgmlType::kQ4_1, GgmlType::kQ5_1, GgmlType::kIQ4_NL}) {
    for (int64_t threads : {1, 2}) {
      for (int64_t layout : {0, 1}) b->Args({static_cast<int64_t>(t), threads, layout});
    }
  }
}
BENCHMARK(BM_DecodeStream)->Apply(DecodeStreamArgs)->UseRealTime();

// Prefill attention of one causal prompt on 1 thread, the way LlamaContext
// calls it: blocks of `rows` query rows (tokens x the 4 query heads of a KV
// head) against F16 keys. args: head_dim, prompt tokens, rows per call.
void BM_Attention(benchmark::State& state) {
  const auto hd = static_cast<int32_t>(state.range(0));
  const auto n = static_cast<int32_t>(state.range(1));
  const int rows_per_call = static_cast<int>(state.range(2));
  constexpr int kGroup = 4;
  const size_t row_bytes = GgmlRowSize(GgmlType::kF16, hd);
  const auto k = Encode(GgmlType::kF16, Random(int64_t{n} * hd, 5));
  const auto v = Encode(GgmlType::kF16, Random(int64_t{n} * hd, 6));
  std::vector<const void*> k_rows, v_rows;
  for (int32_t j = 0; j < n; ++j) {
    k_rows.push_back(k.data() + j * row_bytes);
    v_rows.push_back(v.data() + j * row_bytes);
  }
  std::vector<float> q = Random(int64_t{n} * kGroup * hd, 7), out(q.size());
  for (float& x : q) x *= kLog2e / std::sqrt(static_cast<float>(hd));
  std::vector<float> work(AttentionWorkFloats(hd));
  const KernelTable& table = ActiveKernels();
  const AttentionKeys keys{GgmlType::kF16, hd, k_rows.data(), v_rows.data()};
  for (auto _ : state) {
    for (int32_t r0 = 0; r0 < n * kGroup; r0 += rows_per_call) {
      const float* qp[kAttnMaxRows];
      float* op[kAttnMaxRows];
      int32_t n_keys[kAttnMaxRows];
      const int count = std::min(rows_per_call, n * kGroup - r0);
      for (int r = 0; r < count; ++r) {
        qp[r] = q.data() + static_cast<size_t>(r0 + r) * hd;
        op[r] = out.data() + static_cast<size_t>(r0 + r) * hd;
        n_keys[r] = (r0 + r) / kGroup + 1;
      }
      table.attention({count, qp, n_keys, op, 0.0f}, keys, work.data());
    }
    benchmark::ClobberMemory();
  }
  state.SetLabel(table.name);
  // q·k and p·v: 4 flops per key and element of every row, causal.
  const double flops = 4.0 * hd * kGroup * (static_cast<double>(n) * (n + 1) / 2);
  state.counters["GFLOPS"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void AttentionArgs(benchmark::internal::Benchmark* b) {
  for (int64_t hd : {64, 128}) {
    for (int64_t rows : {16, 32, 64}) {
      if (rows <= kAttnMaxRows) b->Args({hd, 512, rows});
    }
  }
}
BENCHMARK(BM_Attention)->Apply(AttentionArgs);

// The SwiGLU epilogue as MatMulMany runs it after a unit: 64 tokens x 64
// columns of gate and up, rows n_ff apart. args: n_ff, columns per call.
void BM_SwiGlu(benchmark::State& state) {
  const int64_t n_ff = state.range(0), cols = state.range(1);
  constexpr int64_t kTokens = 64;
  const std::vector<float> gate0 = Random(kTokens * n_ff, 8), up0 = Random(kTokens * n_ff, 9);
  CacheAlignedVector<float> gate(gate0.begin(), gate0.end()), up(up0.begin(), up0.end());
  const KernelTable& table = ActiveKernels();
  for (auto _ : state) {
    for (int64_t t = 0; t < kTokens; ++t) {
      // Fresh gate values each time (a few cycles per 16 elements), not the iterate of SwiGLU.
      std::copy_n(gate0.data() + t * n_ff, cols, gate.data() + t * n_ff);
      table.swiglu(cols, gate.data() + t * n_ff, up.data() + t * n_ff);
    }
    benchmark::ClobberMemory();
  }
  state.SetLabel(table.name);
  state.counters["elements"] = benchmark::Counter(static_cast<double>(kTokens * cols),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SwiGlu)->Args({2816, 64})->Args({8192, 64})->Args({64, 64});

// args: type id, n_out, n_tokens, backend (1 native, 2 blas); n_in = 2048, 2 threads.
void BM_MatMulBackend(benchmark::State& state) {
  if (state.range(3) == 2 && !BlasAvailable()) {
    state.SkipWithError("no BLAS");
    return;
  }
  const auto backend = state.range(3) == 2 ? MatMulBackend::kBlas : MatMulBackend::kNative;
  RunMatMul(state, static_cast<GgmlType>(state.range(0)), 2048, state.range(1), state.range(2),
            backend, 2);
}

void BackendArgs(benchmark::internal::Benchmark* b) {
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    for (int64_t n_out : {2048, 5632}) {
      for (int64_t tokens : {8, 16, 32, 64, 128, 256}) {
        for (int64_t backend : {1, 2}) b->Args({static_cast<int64_t>(t), n_out, tokens, backend});
      }
    }
  }
}
BENCHMARK(BM_MatMulBackend)->Apply(BackendArgs)->UseRealTime();

}  // namespace
}  // namespace valet

BENCHMARK_MAIN();
