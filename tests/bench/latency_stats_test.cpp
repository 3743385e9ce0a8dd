#include "bench/latency_stats.h"

#include <gtest/gtest.h>

namespace valet {
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

}  // namespace
}  // namespace valet
