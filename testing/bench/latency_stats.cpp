#include "testing/bench/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace valet::testing {

double NearestRank(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return -1.0;
  const double n = static_cast<double>(sorted.size());
  const size_t rank = static_cast<size_t>(std::max(1.0, std::ceil(p / 100.0 * n)));
  return sorted[std::min(rank, sorted.size()) - 1];
}

Percentiles ComputePercentiles(std::vector<double> samples) {
  Percentiles p;
  if (samples.empty()) return p;
  std::sort(samples.begin(), samples.end());
  p.count = static_cast<int64_t>(samples.size());
  p.p50 = NearestRank(samples, 50);
  p.p90 = NearestRank(samples, 90);
  p.p99 = NearestRank(samples, 99);
  p.max = samples.back();
  p.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  return p;
}

namespace {

double Resampled(const std::vector<double>& samples, double pct, std::mt19937_64& rng, std::vector<double>& scratch) {
  std::uniform_int_distribution<size_t> pick(0, samples.size() - 1);
  scratch.resize(samples.size());
  for (double& x : scratch) x = samples[pick(rng)];
  std::sort(scratch.begin(), scratch.end());
  return NearestRank(scratch, pct);
}

}  // namespace

RatioInterval BootstrapRatio(const std::vector<double>& num, const std::vector<double>& den, double pct,
                             uint64_t seed, int replicates) {
  if (num.empty() || den.empty() || replicates < 1) return {};
  std::mt19937_64 rng(seed);
  std::vector<double> ratios, scratch;
  ratios.reserve(static_cast<size_t>(replicates));
  for (int i = 0; i < replicates; ++i) {
    const double n = Resampled(num, pct, rng, scratch);
    const double d = Resampled(den, pct, rng, scratch);
    if (d > 0) ratios.push_back(n / d);
  }
  if (ratios.empty()) return {};
  std::sort(ratios.begin(), ratios.end());
  return {NearestRank(ratios, 2.5), NearestRank(ratios, 97.5)};
}

Percentiles Percentiles::Scaled(double factor) const {
  if (empty()) return *this;
  Percentiles s = *this;
  s.p50 *= factor;
  s.p90 *= factor;
  s.p99 *= factor;
  s.max *= factor;
  s.mean *= factor;
  return s;
}

}  // namespace valet::testing
