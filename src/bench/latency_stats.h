// Percentiles of latency samples, in the form vLLM's `bench serve` reports
// them: p50/p90/p99/max, never only a mean.
#pragma once

#include <cstdint>
#include <vector>

namespace valet {

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

// The smallest sample with at least p% of the samples at or below it.
double NearestRank(const std::vector<double>& sorted, double p);
Percentiles ComputePercentiles(std::vector<double> samples);

}  // namespace valet
