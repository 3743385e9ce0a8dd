// The element-wise activations (kernels/activation.h): the reference against
// SiLU in double precision over the float range, and every table's variant
// against the reference bit for bit, tails and special values included.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/ref/scalar.h"

namespace valet {
namespace {

using testing::Tables;

std::vector<float> SpecialGates() {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::vector<float> g = {std::numeric_limits<float>::quiet_NaN(), kInf, 3e38f, 1e-30f, 1e-45f};
  for (float x : {0.0f, 0.5f, 20.0f, 87.3f, 88.72f, 88.73f, 89.0f, 103.9f, 104.0f, 150.0f})
    g.push_back(x);
  for (size_t i = 1, n = g.size(); i < n; ++i) g.push_back(-g[i]);
  // Around the rounding boundaries of n = round(x log2 e).
  for (int k = -150; k <= 130; k += 7) {
    const float x = (static_cast<float>(k) + 0.5f) * 0.693147180559945f;
    g.push_back(x);
    g.push_back(std::nextafter(x, 0.0f));
    g.push_back(std::nextafter(x, 1000.0f));
  }
  return g;
}

// SiLU in double, the reference's target.
double SiluExact(float g) { return g / (1.0 + std::exp(-static_cast<double>(g))); }

TEST(SwiGlu, ReferenceMatchesSiluInDouble) {
  std::vector<float> gate = testing::RandomRow(4096, 3, 8.0f);
  for (int k = -1040; k <= 1040; ++k) gate.push_back(static_cast<float>(k) * 0.1f);
  for (float g : SpecialGates()) gate.push_back(g);
  std::vector<float> out = gate;
  const std::vector<float> up(gate.size(), 1.0f);
  scalar::SwiGlu(static_cast<int64_t>(out.size()), out.data(), up.data());
  for (size_t i = 0; i < gate.size(); ++i) {
    const float g = gate[i];
    SCOPED_TRACE(::testing::Message() << "g = " << g);
    if (std::isnan(g) || g == -std::numeric_limits<float>::infinity()) {
      EXPECT_TRUE(std::isnan(out[i]));  // as g / (1 + e^-g) in any precision
      continue;
    }
    const double want = SiluExact(g);
    if (std::isinf(want)) {
      EXPECT_EQ(out[i], want);
      continue;
    }
    // A few ulps of the result; where e^-g overflows (g < -88.72) the result
    // is -0 against a true value under 1e-36.
    EXPECT_NEAR(out[i], want, 4e-7 * std::fabs(want) + 1e-36);
  }
}

// Every 4096th float of [-88, 88]: the reference's worst SiLU error in ulps
// of the float result, printed (docs/engine.md quotes it) and bounded.
TEST(SwiGlu, ReferenceSweepStaysWithinAFewUlps) {
  std::vector<float> gate;
  for (uint32_t bits = 0; std::bit_cast<float>(bits) <= 88.0f; bits += 4096) {
    gate.push_back(std::bit_cast<float>(bits));
    gate.push_back(-std::bit_cast<float>(bits));
  }
  std::vector<float> out = gate;
  const std::vector<float> up(gate.size(), 1.0f);
  scalar::SwiGlu(static_cast<int64_t>(out.size()), out.data(), up.data());
  double worst = 0.0;
  float worst_g = 0.0f;
  for (size_t i = 0; i < gate.size(); ++i) {
    const double want = SiluExact(gate[i]);
    if (want == 0.0 || std::fabs(want) < std::numeric_limits<float>::min()) continue;  // no float ulp to speak of
    const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
    const double err = std::fabs(out[i] - want) / ulp;
    if (err > worst) {
      worst = err;
      worst_g = gate[i];
    }
  }
  std::printf("[ swiglu   ] reference SiLU over %zu gates in [-88, 88]: worst %.2f ulp at g = %g\n", gate.size(), worst,
              worst_g);
  EXPECT_LE(worst, 4.0);
}

TEST(SwiGlu, EveryTableEqualsTheReference) {
  std::vector<float> gate = testing::RandomRow(1000, 7, 6.0f);
  for (float g : SpecialGates()) gate.push_back(g);
  const std::vector<float> up = testing::RandomRow(static_cast<int64_t>(gate.size()), 8, 2.0f);
  for (const KernelTable* table : Tables()) {
    SCOPED_TRACE(table->name);
    ASSERT_NE(table->swiglu, nullptr);
    // Every length up to two vectors and a long one, from odd offsets, so the
    // variants' tails are covered.
    for (size_t n : {size_t{1}, size_t{3}, size_t{7}, size_t{8}, size_t{9}, size_t{15}, size_t{16},
                     size_t{17}, gate.size() - 5}) {
      for (size_t off : {size_t{0}, size_t{1}, size_t{5}}) {
        std::vector<float> want(gate.begin() + off, gate.begin() + off + n), got = want;
        scalar::SwiGlu(static_cast<int64_t>(n), want.data(), up.data() + off);
        table->swiglu(static_cast<int64_t>(n), got.data(), up.data() + off);
        for (size_t i = 0; i < n; ++i) {
          if (std::isnan(want[i])) {
            EXPECT_TRUE(std::isnan(got[i])) << "g = " << gate[off + i];
          } else {
            EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
                << "g = " << gate[off + i] << ": " << got[i] << " vs " << want[i];
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace valet
