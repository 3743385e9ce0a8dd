// fp16/bf16 conversions, checked exhaustively against definitions written out
// independently (ldexp arithmetic and nearest-candidate search in double).
#include "kernels/fp16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/kernel_table.h"

namespace valet {
namespace {

// IEEE binary16 by its definition.
double HalfValue(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  if (exp == 0x1f) return mant ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

bool IsHalfNaN(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

// Nearest half to f among all finite halves and the infinities, ties to the
// even bit pattern; overflow follows IEEE (>= 65520 -> inf).
uint16_t ReferenceToHalf(float f) {
  const double v = f;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a >= 65520.0) return sign | 0x7c00;
  uint16_t lo = 0, hi = 0x7bff;  // binary search on positive patterns (monotone in value)
  while (lo < hi) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (HalfValue(mid) <= a) lo = mid; else hi = static_cast<uint16_t>(mid - 1);
  }
  uint16_t best = lo;
  if (lo < 0x7bff) {
    const double dlo = a - HalfValue(lo), dhi = HalfValue(static_cast<uint16_t>(lo + 1)) - a;
    if (dhi < dlo || (dhi == dlo && (lo & 1))) best = static_cast<uint16_t>(lo + 1);
  }
  return sign | best;
}

TEST(Fp16, HalfToFloatAllValues) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = Fp16ToFp32(static_cast<uint16_t>(h));
    const double want = HalfValue(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << h;
      // Payload kept in the top mantissa bits, quiet bit set (as F16C does).
      EXPECT_EQ((std::bit_cast<uint32_t>(f) >> 13) & 0x1ff, h & 0x1ffu) << h;
      EXPECT_NE(std::bit_cast<uint32_t>(f) & 0x00400000u, 0u) << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), want) << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
    }
  }
}

TEST(Fp16, FloatToHalfRoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    if (IsHalfNaN(static_cast<uint16_t>(h))) continue;
    ASSERT_EQ(Fp32ToFp16(Fp16ToFp32(static_cast<uint16_t>(h))), h) << h;
  }
}

TEST(Fp16, FloatToHalfRoundsMidpointsAndNeighboursToNearestEven) {
  // Every midpoint between adjacent finite halves, and the floats just either side.
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    const double mid = (HalfValue(static_cast<uint16_t>(h)) + HalfValue(static_cast<uint16_t>(h + 1))) / 2;
    const float m = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(m), mid);  // midpoints are exact in f32
    for (float f : {m, std::nextafter(m, 0.0f), std::nextafter(m, INFINITY)}) {
      ASSERT_EQ(Fp32ToFp16(f), ReferenceToHalf(f)) << f;
      ASSERT_EQ(Fp32ToFp16(-f), ReferenceToHalf(-f)) << -f;
    }
  }
}

TEST(Fp16, FloatToHalfRandomAndSpecialValues) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    const float f = std::bit_cast<float>(bits(rng));
    if (std::isnan(f)) {
      EXPECT_TRUE(IsHalfNaN(Fp32ToFp16(f)));
      continue;
    }
    ASSERT_EQ(Fp32ToFp16(f), ReferenceToHalf(f)) << f;
  }
  EXPECT_EQ(Fp32ToFp16(65504.0f), 0x7bff);
  EXPECT_EQ(Fp32ToFp16(65519.996f), 0x7bff);
  EXPECT_EQ(Fp32ToFp16(65520.0f), 0x7c00);
  EXPECT_EQ(Fp32ToFp16(-INFINITY), 0xfc00);
  EXPECT_EQ(Fp32ToFp16(-0.0f), 0x8000);
  EXPECT_EQ(Fp32ToFp16(std::ldexp(1.0f, -25)), 0x0000);                 // tie -> even (zero)
  EXPECT_EQ(Fp32ToFp16(std::ldexp(3.0f, -25)), 0x0002);                 // tie -> even
  EXPECT_EQ(Fp32ToFp16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)), 0x0400);  // carry into normal
}

TEST(Bf16, AllValuesRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = Bf16ToFp32(static_cast<uint16_t>(b));
    ASSERT_EQ(std::bit_cast<uint32_t>(f), b << 16);
    if (std::isnan(f)) {
      const uint16_t back = Fp32ToBf16(f);
      EXPECT_TRUE(std::isnan(Bf16ToFp32(back)));
      EXPECT_EQ(back, b | 0x40u);
    } else {
      ASSERT_EQ(Fp32ToBf16(f), b);
    }
  }
}

// Nearest of the two bf16 neighbours (truncation and the next pattern up), ties to even.
uint16_t ReferenceToBf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const auto lo = static_cast<uint16_t>(u >> 16);
  const auto hi = static_cast<uint16_t>(lo + 1);
  const double v = std::fabs(static_cast<double>(f));
  const double dlo = v - std::fabs(static_cast<double>(Bf16ToFp32(lo)));
  const double vhi = (hi & 0x7f80) == 0x7f80 ? std::ldexp(1.0, 128) : std::fabs(static_cast<double>(Bf16ToFp32(hi)));
  const double dhi = vhi - v;
  if (dhi < dlo || (dhi == dlo && (lo & 1))) return hi;
  return lo;
}

TEST(Bf16, RandomFloatsRoundToNearestEven) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = bits(rng);
    if (i % 4 == 0) u = (u & 0xffff0000u) | 0x8000u;  // exact ties
    const float f = std::bit_cast<float>(u);
    if (std::isnan(f) || (u & 0x7fffffffu) >= 0x7f7f8000u) continue;  // NaN / rounds to inf: below
    ASSERT_EQ(Fp32ToBf16(f), ReferenceToBf16(f)) << std::hex << u;
  }
  EXPECT_EQ(Fp32ToBf16(std::bit_cast<float>(0x7f7f8000u)), 0x7f80);  // max finite tie -> inf (even)
  EXPECT_EQ(Fp32ToBf16(std::bit_cast<float>(0x7f800001u)), 0x7fc0);  // signalling NaN stays NaN
}

TEST(Fp16, SimdRowConversionsMatchScalar) {
  const KernelTable* avx2 = Avx2Kernels();
  if (avx2 == nullptr) GTEST_SKIP() << "CPU lacks AVX2/F16C";
  std::vector<uint16_t> all(65536 + 5);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  const auto n = static_cast<int64_t>(all.size());
  std::vector<float> a(all.size()), b(all.size());
  ScalarKernels()[GgmlType::kF16].to_float(all.data(), a.data(), n);
  (*avx2)[GgmlType::kF16].to_float(all.data(), b.data(), n);
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << i;

  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  std::vector<float> f(100003);
  for (float& x : f) x = std::bit_cast<float>(bits(rng) & 0xc7ffffffu);  // mostly near half range
  std::vector<uint16_t> hs(f.size()), hv(f.size());
  ScalarKernels()[GgmlType::kF16].from_float(f.data(), hs.data(), static_cast<int64_t>(f.size()));
  (*avx2)[GgmlType::kF16].from_float(f.data(), hv.data(), static_cast<int64_t>(f.size()));
  EXPECT_EQ(hs, hv);
}

}  // namespace
}  // namespace valet
