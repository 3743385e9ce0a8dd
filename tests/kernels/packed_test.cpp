// Row-group (packed) weights: every table's row-group kernels against the
// scalar reference, and the packed matrix against its row-major original.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernel_test_util.h"
#include "kernels/matmul.h"
#include "kernels/weight_pack.h"

namespace valet {
namespace {

using testing::RandomRow;

const GgmlType kPackedTypes[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,  GgmlType::kQ5_1,
                                 GgmlType::kIQ4_NL, GgmlType::kQ8_0, GgmlType::kQ2_K, GgmlType::kQ3_K,
                                 GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_XS};

class PackedTest : public ::testing::TestWithParam<GgmlType> {};

void CheckEveryTable(GgmlType type, int64_t n_out) {
  const int64_t n_in = 768;
  const auto rows = testing::Encode(ScalarKernels(), type, RandomRow(n_in * n_out, 5, 0.1f));
  const WeightMatrix w{type, n_in, n_out, rows.data(), GgmlRowSize(type, n_in)};
  ASSERT_TRUE(CanPack(w));
  std::vector<uint8_t> packed(PackedBytes(w));
  const WeightMatrix wp = PackWeights(w, packed.data());
  ThreadPool pool(2);
  MatMulScratch scratch;
  const KernelTable* tables[kMaxKernelTables];
  const int n_tables = AvailableKernelTables(tables);
  // MatMul would fall back to the scalar kernels for a table without them,
  // and the comparison below would pass without testing anything.
  for (int k = 0; k < n_tables; ++k) {
    const TypeKernels& kernels = (*tables[k])[type];
    ASSERT_NE(kernels.packed_gemm.fn, nullptr) << tables[k]->name;
    ASSERT_NE(kernels.packed_gemv.fn, nullptr) << tables[k]->name;
    if (kernels.packed_gemm_narrow.fn != nullptr) {
      EXPECT_LT(kernels.packed_gemm_narrow.cols, kernels.packed_gemm.cols) << tables[k]->name;
      EXPECT_EQ(kernels.packed_gemm.rows % kernels.packed_gemm_narrow.rows, 0) << tables[k]->name;
    }
  }
  // Past the tiles: 4 tokens (decode) a narrower tile's, 66 two for the GEMV,
  // 5, 70 and 150 (two chunks of 75) a few for a tile padded with zero rows.
  for (int64_t n_tokens : {1, 4, 5, 66, 70, 150}) {
    const auto x = RandomRow(n_tokens * n_in, 9);
    const size_t n_y = static_cast<size_t>(n_tokens * n_out);
    std::vector<float> want(n_y), y_rows(n_y), y(n_y);
    MatMul(wp, x.data(), n_tokens, want.data(), pool, scratch,
           MatMulOptions{MatMulBackend::kNative, &ScalarKernels()});
    MatMul(w, x.data(), n_tokens, y_rows.data(), pool, scratch,
           MatMulOptions{MatMulBackend::kNative, &ScalarKernels()});
    for (size_t i = 0; i < n_y; ++i) {
      // Same integers and scales; only the float summation rounds differently.
      ASSERT_NEAR(want[i], y_rows[i], 1e-5 * (std::fabs(y_rows[i]) + 1.0))
          << GgmlTypeName(type) << " output " << i << " of " << n_tokens << " tokens";
    }
    for (int k = 0; k < n_tables; ++k) {
      MatMul(wp, x.data(), n_tokens, y.data(), pool, scratch,
             MatMulOptions{MatMulBackend::kNative, tables[k]});
      ASSERT_EQ(0, std::memcmp(y.data(), want.data(), n_y * sizeof(float)))
          << tables[k]->name << " " << GgmlTypeName(type) << " n_tokens=" << n_tokens << " n_out=" << n_out;
    }
  }
}

// 6 row groups split over 2 threads take 3 each, 5 take 2 and 3: a kernel of
// several groups per call leaves a group to the GEMV in both; the token
// counts leave tails of every kind.
TEST_P(PackedTest, EveryTableEqualsScalarAndAgreesWithRows) {
  for (int64_t n_out : {48, 40}) ASSERT_NO_FATAL_FAILURE(CheckEveryTable(GetParam(), n_out)) << n_out << " rows";
}

INSTANTIATE_TEST_SUITE_P(PackedTypes, PackedTest, ::testing::ValuesIn(kPackedTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(GgmlTypeName(info.param));
                         });

TEST(WeightPack, RefusesPartialGroupsAndTypesWithoutALayout) {
  std::vector<uint8_t> q4(GgmlRowSize(GgmlType::kQ4_0, 64) * 12);
  EXPECT_FALSE(CanPack(WeightMatrix{GgmlType::kQ4_0, 64, 12, q4.data(), GgmlRowSize(GgmlType::kQ4_0, 64)}));
  EXPECT_TRUE(CanPack(WeightMatrix{GgmlType::kQ4_0, 64, 8, q4.data(), GgmlRowSize(GgmlType::kQ4_0, 64)}));
  std::vector<uint8_t> f16(GgmlRowSize(GgmlType::kF16, 64) * 8);
  EXPECT_FALSE(CanPack(WeightMatrix{GgmlType::kF16, 64, 8, f16.data(), GgmlRowSize(GgmlType::kF16, 64)}));
}

}  // namespace
}  // namespace valet
