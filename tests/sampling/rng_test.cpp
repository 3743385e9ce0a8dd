#include "sampling/rng.h"

#include <gtest/gtest.h>

#include <vector>


namespace valet {
namespace {

TEST(RngTest, SeedExpandsWithSplitMix64) {
  // splitmix64 from state 0: first output is the published 0xe220a8397b1dcdaf.
  Rng rng(0);
  EXPECT_EQ(rng.state().words[0], 0xe220a8397b1dcdafULL);
}

TEST(RngTest, FollowsXoshiro256StarStar) {
  // From state {1,2,3,4}: first output rotl(2*5, 7)*9 = 1280*9 = 11520; the
  // update then makes s[1] = 2^2 = 0, so the second output is 0.
  Rng rng(0);
  rng.set_state(RngState{{1, 2, 3, 4}});
  EXPECT_EQ(rng.NextU64(), 11520u);
  EXPECT_EQ(rng.NextU64(), 0u);
}

TEST(RngTest, SameSeedSameStreamDifferentSeedDifferentStream) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.NextU64();
    EXPECT_EQ(x, b.NextU64());
    differs |= x != c.NextU64();
  }
  EXPECT_TRUE(differs);
}

TEST(RngTest, StateRoundTripResumesBitExactly) {
  Rng a(7);
  for (int i = 0; i < 13; ++i) a.NextU64();
  const RngState saved = a.state();
  std::vector<uint64_t> expected;
  for (int i = 0; i < 50; ++i) expected.push_back(a.NextU64());

  Rng b(999);
  b.set_state(saved);
  EXPECT_EQ(b.state(), saved);
  for (uint64_t x : expected) EXPECT_EQ(b.NextU64(), x);
}

TEST(RngTest, NextDoubleIsIn01WithFiftyThreeBits) {
  Rng rng(1);
  double sum = 0.0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double d = rng.NextDouble();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    const double scaled = d * 0x1.0p53;
    ASSERT_EQ(scaled, static_cast<double>(static_cast<uint64_t>(scaled)));
    sum += d;
  }
  // Mean of U[0,1) over 1e5 draws: sd ~ 0.29/316 ~ 0.0009.
  EXPECT_NEAR(sum / n, 0.5, 0.005);
}

TEST(RngTest, NextDoubleUsesTheTopBits) {
  Rng a(5), b(5);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(a.NextDouble(), static_cast<double>(b.NextU64() >> 11) / 9007199254740992.0);
  }
}

}  // namespace
}  // namespace valet
