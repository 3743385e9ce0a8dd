// Percentiles of latency samples, in the form vLLM's `bench serve` reports
// them: p50/p90/p99/max, never only a mean.
#pragma once

#include <cstdint>
#include <vector>

namespace valet::testing {

struct Percentiles {
  int64_t count = 0;
  // Nearest-rank percentiles, so each is one of the samples and they are
  // ordered p50 <= p90 <= p99 <= max. All -1 when there are no samples.
  double p50 = -1.0;
  double p90 = -1.0;
  double p99 = -1.0;
  double max = -1.0;
  double mean = -1.0;

  bool empty() const { return count == 0; }
  Percentiles Scaled(double factor) const;  // e.g. seconds -> milliseconds
};

// Nearest-rank p99 is the maximum below 100 samples: report it as p99 only
// from here on.
inline constexpr int64_t kMinSamplesForP99 = 100;

// A 95% percentile-bootstrap interval for pct(num) / pct(den), nearest-rank
// percentiles: each replicate resamples both sets with replacement (seeded,
// so a report is reproducible). {-1, -1} when either set is empty.
struct RatioInterval {
  double lo = -1.0;
  double hi = -1.0;
};
RatioInterval BootstrapRatio(const std::vector<double>& num, const std::vector<double>& den, double pct,
                             uint64_t seed, int replicates = 2000);

// The smallest sample with at least p% of the samples at or below it.
double NearestRank(const std::vector<double>& sorted, double p);
Percentiles ComputePercentiles(std::vector<double> samples);

}  // namespace valet::testing
