// Dot products: the scalar reference against a double-precision sum over the
// dequantized rows, and the SIMD variants against the scalar reference.
//
// Exactness: the super-block types' (Q2_K..Q6_K, IQ4_XS) SIMD results must be
// bit-identical to the reference (same integers, same float operations in the
// same order), and so must NEON's Q8_0 and Q4_0. F32/F16/BF16, and the x86
// tables' 32-element block types, accumulate in float lanes, so they must agree
// within a summation-order bound: |a - b| <= 1e-5 * sum|w_i * a_i|. Q4_1/Q5_1
// against Q8_1 also carry the rounding of Q8_1's s (testing::Q8_1OffsetBound).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "kernel_test_util.h"
#include "kernels/kernel_table.h"

namespace valet {
namespace {

using testing::Decode;
using testing::Encode;
using testing::RandomRow;

std::vector<int64_t> LengthsFor(GgmlType type) {
  switch (testing::BlockSize(type)) {
    case 1:
      return {1, 7, 8, 31, 32, 33, 100, 256, 1000, 4096};
    case 32:
      return {32, 64, 96, 320, 4096};
    default:
      return {256, 512, 2048, 4096};
  }
}

// The super-block types apply scales per super-block in every table; NEON also keeps
// the reference's per-block float updates for the 32-element block types.
bool SimdBitExact(const KernelTable& table, GgmlType type) {
  if (testing::BlockSize(type) == 256) return true;
  return std::string_view(table.name).starts_with("neon") && (type == GgmlType::kQ8_0 || type == GgmlType::kQ4_0);
}

struct DotCase {
  std::vector<uint8_t> w, a;  // encoded weight row and activation row
  double exact;               // double dot of the dequantized rows
  double abs_sum;             // sum |w_i * a_i|, the scale of rounding error
  double offset_bound;        // testing::Q8_1OffsetBound of the rows
};

DotCase MakeCase(GgmlType type, int64_t n, uint32_t seed) {
  const KernelTable& ref = ScalarKernels();
  const GgmlType vdt = ref[type].vec_dot_type;
  DotCase c;
  c.w = Encode(ref, type, RandomRow(n, seed));
  c.a = Encode(ref, vdt, RandomRow(n, seed + 1000, 0.5f));
  const auto wf = Decode(ref, type, c.w, n);
  const auto af = Decode(ref, vdt, c.a, n);
  c.exact = 0;
  c.abs_sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    c.exact += static_cast<double>(wf[i]) * af[i];
    c.abs_sum += std::fabs(static_cast<double>(wf[i]) * af[i]);
  }
  c.offset_bound = testing::Q8_1OffsetBound(vdt, wf.data(), af.data(), n);
  return c;
}

class VecDotTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(VecDotTest, ScalarMatchesDequantizedDoubleSum) {
  const GgmlType type = GetParam();
  for (int64_t n : LengthsFor(type)) {
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      const DotCase c = MakeCase(type, n, seed);
      const float got = ScalarKernels()[type].vec_dot(n, c.w.data(), c.a.data());
      // K-quants dequantize as d*sc*q - dmin*m in float, so the dequantized
      // values carry rounding of terms larger than themselves: allow 1e-4.
      const double tol =
          (testing::BlockSize(type) == 256 ? 1e-4 : 1e-5) * c.abs_sum + c.offset_bound + 1e-30;
      EXPECT_NEAR(got, c.exact, tol) << GgmlTypeName(type) << " n=" << n;
    }
  }
}

// Every SIMD table this CPU can run (AVX2, AVX-VNNI, NEON).
TEST_P(VecDotTest, SimdMatchesScalar) {
  const KernelTable* tables[kMaxKernelTables];
  const int n_tables = AvailableKernelTables(tables);
  if (n_tables < 2) GTEST_SKIP() << "no SIMD kernel table on this CPU";
  const GgmlType type = GetParam();
  for (int t = 1; t < n_tables; ++t) {
    const KernelTable& simd = *tables[t];
    for (int64_t n : LengthsFor(type)) {
      for (uint32_t seed = 1; seed <= 5; ++seed) {
        const DotCase c = MakeCase(type, n, seed);
        const float want = ScalarKernels()[type].vec_dot(n, c.w.data(), c.a.data());
        const float got = simd[type].vec_dot(n, c.w.data(), c.a.data());
        if (SimdBitExact(simd, type)) {
          EXPECT_EQ(got, want) << simd.name << " " << GgmlTypeName(type) << " n=" << n;
        } else {
          EXPECT_NEAR(got, want, 1e-5 * c.abs_sum + 1e-30)
              << simd.name << " " << GgmlTypeName(type) << " n=" << n;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, VecDotTest, ::testing::ValuesIn(testing::kWeightTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(GgmlTypeName(info.param));
                         });

TEST(KernelTable, ActiveIsAnAvailableTableAndComplete) {
  const KernelTable& active = ActiveKernels();
  EXPECT_TRUE(&active == &ScalarKernels() || &active == Avx2Kernels() ||
              &active == AvxVnniKernels() || &active == Avx512VnniKernels() ||
              &active == Avx512Bf16Kernels() || &active == NeonKernels() || &active == NeonDotprodKernels() ||
              &active == NeonI8mmKernels());
  EXPECT_STREQ(ActiveKernelsName(), active.name);
  for (GgmlType t : testing::kWeightTypes) {
    EXPECT_TRUE(active.SupportsWeight(t)) << GgmlTypeName(t);
    EXPECT_NE(active[t].to_float, nullptr);
    EXPECT_NE(active[t].from_float, nullptr);
    EXPECT_NE(active[active[t].vec_dot_type].from_float, nullptr);
  }
  EXPECT_FALSE(active.SupportsWeight(GgmlType::kIQ2_XXS));
  EXPECT_FALSE(active.SupportsWeight(GgmlType::kQ8_1));  // activation-only
  EXPECT_FALSE(active.SupportsWeight(GgmlType::kQ8_K));  // activation-only
  EXPECT_EQ(active[GgmlType::kQ4_0].vec_dot_type, GgmlType::kQ8_0);
  EXPECT_EQ(active[GgmlType::kQ4_K].vec_dot_type, GgmlType::kQ8_K);
  EXPECT_EQ(active[GgmlType::kF16].vec_dot_type, GgmlType::kF16);
}

// NEON is mandatory on AArch64, so its builds always offer the table (and
// only those builds do).
TEST(KernelTable, NeonTableExactlyOnAarch64Builds) {
  const KernelTable* tables[kMaxKernelTables];
  const int n_tables = AvailableKernelTables(tables);
  const bool listed = std::find(tables, tables + n_tables, NeonKernels()) != tables + n_tables;
#if defined(__aarch64__) && defined(__ARM_NEON)
  ASSERT_NE(NeonKernels(), nullptr);
  EXPECT_TRUE(listed);
  EXPECT_STREQ(NeonKernels()->name, "neon");
#else
  EXPECT_EQ(NeonKernels(), nullptr);
  EXPECT_FALSE(listed);
#endif
}

}  // namespace
}  // namespace valet
