// Read-only memory bandwidth: threads sum disjoint slices of a 256 MiB buffer,
// the bound a memory-bound decode (weights bytes x tok/s) can approach.
//   build/bench/valet_membw [threads] [reps]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

__attribute__((target("avx2"))) double SumSlice(const float* p, size_t n) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  for (size_t i = 0; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) acc[k] = _mm256_add_ps(acc[k], _mm256_loadu_ps(p + i + 8 * k));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes,
                  _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  double s = 0;
  for (float v : lanes) s += v;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 10;
  if (threads < 1 || threads > 1024 || reps < 1) {
    std::fprintf(stderr, "usage: valet_membw [threads >= 1] [reps >= 1]\n");
    return 2;
  }
  const size_t n = (256u << 20) / sizeof(float);
  std::vector<float> buf(n, 1.0f);
  std::vector<double> gbs;
  double sink = 0;
  for (int r = 0; r < reps; ++r) {
    std::vector<double> part(static_cast<size_t>(threads));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const size_t per = n / static_cast<size_t>(threads);
        part[static_cast<size_t>(t)] = SumSlice(buf.data() + per * static_cast<size_t>(t), per);
      });
    }
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (double v : part) sink += v;
    gbs.push_back(static_cast<double>(n * sizeof(float)) / s / 1e9);
  }
  std::sort(gbs.begin(), gbs.end());
  std::printf(
      "read bandwidth, %d threads, 256 MiB: median %.1f GB/s, best %.1f GB/s (checksum %.0f)\n",
      threads, gbs[gbs.size() / 2], gbs.back(), sink);
  return 0;
}
