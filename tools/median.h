// The median the benchmark commands report (0 for no samples).
#pragma once

#include <algorithm>
#include <vector>

namespace valet::cli {

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace valet::cli
