#include "testing/bench/latency_stats.h"

#include <gtest/gtest.h>

namespace valet {
using namespace valet::testing;
namespace {

TEST(LatencyStats, NearestRankOnOneToAHundred) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  const Percentiles p = ComputePercentiles(v);
  EXPECT_EQ(p.count, 100);
  EXPECT_EQ(p.p50, 50);
  EXPECT_EQ(p.p90, 90);
  EXPECT_EQ(p.p99, 99);
  EXPECT_EQ(p.max, 100);
  EXPECT_DOUBLE_EQ(p.mean, 50.5);
}

TEST(LatencyStats, SmallSamplesPickActualSamples) {
  const Percentiles one = ComputePercentiles({7.0});
  EXPECT_EQ(one.p50, 7.0);
  EXPECT_EQ(one.max, 7.0);
  const Percentiles three = ComputePercentiles({3.0, 1.0, 2.0});
  EXPECT_EQ(three.p50, 2.0);  // rank ceil(1.5) = 2
  EXPECT_EQ(three.p90, 3.0);
  EXPECT_EQ(three.p99, 3.0);
}

TEST(LatencyStats, EmptyAndScaled) {
  const Percentiles none = ComputePercentiles({});
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.p50, -1.0);
  EXPECT_TRUE(none.Scaled(1000).empty());
  const Percentiles ms = ComputePercentiles({0.001, 0.002}).Scaled(1000);
  EXPECT_DOUBLE_EQ(ms.p50, 1.0);
  EXPECT_DOUBLE_EQ(ms.max, 2.0);
}

TEST(LatencyStats, BootstrapIntervalOfAP50Ratio) {
  EXPECT_LT(BootstrapRatio({}, {1.0}, 50, 1).lo, 0);
  EXPECT_LT(BootstrapRatio({1.0}, {}, 50, 1).hi, 0);
  // Constant samples: every replicate gives the same ratio.
  const RatioInterval constant = BootstrapRatio(std::vector<double>(30, 10.0), std::vector<double>(40, 5.0), 50, 1);
  EXPECT_EQ(constant.lo, 2.0);
  EXPECT_EQ(constant.hi, 2.0);
  // Spread samples: the interval holds the point ratio, is seeded, and
  // narrows as the samples grow.
  auto spread = [](int n, double scale) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(scale * (1.0 + (i * 37 % n) / static_cast<double>(n)));
    return v;
  };
  const std::vector<double> num = spread(30, 2.0), den = spread(30, 1.0);
  const double point = ComputePercentiles(num).p50 / ComputePercentiles(den).p50;
  const RatioInterval ci = BootstrapRatio(num, den, 50, 7);
  EXPECT_LE(ci.lo, point);
  EXPECT_GE(ci.hi, point);
  EXPECT_LT(ci.lo, ci.hi);
  const RatioInterval same = BootstrapRatio(num, den, 50, 7);
  EXPECT_EQ(same.lo, ci.lo);
  EXPECT_EQ(same.hi, ci.hi);
  const RatioInterval wide = BootstrapRatio(spread(300, 2.0), spread(300, 1.0), 50, 7);
  EXPECT_LT(wide.hi - wide.lo, ci.hi - ci.lo);
  // Any percentile: the p99 interval of 300 samples holds its point ratio.
  const std::vector<double> num99 = spread(300, 3.0), den99 = spread(300, 1.0);
  const RatioInterval p99 = BootstrapRatio(num99, den99, 99, 7);
  const double point99 = ComputePercentiles(num99).p99 / ComputePercentiles(den99).p99;
  EXPECT_LE(p99.lo, point99);
  EXPECT_GE(p99.hi, point99);
}

}  // namespace
}  // namespace valet
