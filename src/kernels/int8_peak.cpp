#include "kernels/int8_peak.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kernels/int8_peak_loops.h"

namespace valet {
namespace {

using Clock = std::chrono::steady_clock;
using int8_peak::PeakLoop;

// One run lasts about this long: long against the clock's resolution and a
// thread's start-up, short enough that reps x (1 + N threads) stays around a second.
constexpr double kRunSeconds = 0.05;

// Keeps every run's checksum observable.
std::atomic<uint32_t> g_sink{0};

PeakLoop LoopFor(const KernelTable& table) {
  const PeakLoop x86 = int8_peak::X86Loop(table.name);
  return x86.run != nullptr ? x86 : int8_peak::NeonLoop(table.name);
}

// Seconds for `threads` threads to run `iterations` each, from the first
// start to the last join (unpinned: the machine as a job sees it).
double TimeRun(const PeakLoop& loop, int64_t iterations, int threads) {
  std::array<uint8_t, int8_peak::kSeedBytes> seed;
  for (size_t i = 0; i < seed.size(); ++i) seed[i] = static_cast<uint8_t>(i * 37 + 11);
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] { g_sink += loop.run(iterations, seed.data()); });
  }
  for (std::thread& th : pool) th.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Iterations for one run of about kRunSeconds on one thread.
int64_t Calibrate(const PeakLoop& loop) {
  int64_t iterations = 1 << 12;
  double s = TimeRun(loop, iterations, 1);
  while (s < kRunSeconds / 8) {
    iterations *= 4;
    s = TimeRun(loop, iterations, 1);
  }
  return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iterations) * kRunSeconds / s));
}

// Median GOP/s over `reps` runs (2 ops per multiply-add).
double MedianGops(const PeakLoop& loop, int64_t iterations, int threads, int reps) {
  const double ops = 2.0 * static_cast<double>(loop.macs_per_iteration) * static_cast<double>(iterations) * threads;
  std::vector<double> gops;
  for (int r = 0; r < reps; ++r) gops.push_back(ops / TimeRun(loop, iterations, threads) / 1e9);
  std::sort(gops.begin(), gops.end());
  return gops[gops.size() / 2];
}

}  // namespace

std::optional<Int8Peak> MeasureInt8Peak(const KernelTable& table, int threads, int reps) {
  const PeakLoop loop = LoopFor(table);
  if (loop.run == nullptr || threads < 1 || reps < 1) return std::nullopt;
  const int64_t iterations = Calibrate(loop);
  Int8Peak peak;
  peak.instruction = loop.instruction;
  peak.threads = threads;
  peak.gops_per_core = MedianGops(loop, iterations, 1, reps);
  peak.gops_threads = MedianGops(loop, iterations, threads, reps);
  return peak;
}

}  // namespace valet
