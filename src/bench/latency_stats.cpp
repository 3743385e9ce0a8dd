#include "bench/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace valet {

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

}  // namespace valet
