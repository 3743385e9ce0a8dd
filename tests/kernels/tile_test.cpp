// Tile kernels (gemm/gemv) and the f32 helpers, for every kernel table this
// CPU can run: each tile result against the same table's vec_dot (bit-exact
// for the integer types, summation order only for the float types) and
// against the scalar reference (within the vec_dot tests' bound).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernel_test_util.h"
#include "kernels/kernel_table.h"

namespace valet {
namespace {

using testing::Encode;
using testing::RandomRow;
using testing::Tables;

bool IsFloatType(GgmlType type) { return testing::BlockSize(type) == 1; }

std::vector<int64_t> LengthsFor(GgmlType type) {
  switch (testing::BlockSize(type)) {
    case 1:
      return {1, 7, 8, 17, 64, 100, 1024};
    case 32:
      return {32, 64, 96, 320, 2048};
    default:
      return {256, 512, 2048};
  }
}

// `count` encoded rows of n elements, `stride` bytes apart (an extra block of
// padding, so a tile that ignored the stride would read the wrong data).
struct Rows {
  std::vector<uint8_t> data;
  std::vector<std::vector<float>> values;  // decoded (what the dot products see)
  size_t stride = 0;
  const uint8_t* Row(int i) const { return data.data() + static_cast<size_t>(i) * stride; }
};

Rows MakeRows(GgmlType type, int64_t n, int count, uint32_t seed, float scale) {
  Rows r;
  r.stride = GgmlRowSize(type, n) + GgmlRowSize(type, testing::BlockSize(type));
  r.data.assign(r.stride * static_cast<size_t>(count), 0xa5);
  for (int i = 0; i < count; ++i) {
    const auto enc =
        Encode(ScalarKernels(), type, RandomRow(n, seed + static_cast<uint32_t>(i), scale));
    std::copy(enc.begin(), enc.end(), r.data.begin() + static_cast<std::ptrdiff_t>(i * r.stride));
    r.values.push_back(testing::Decode(ScalarKernels(), type, enc, n));
  }
  return r;
}

double AbsSum(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::fabs(static_cast<double>(a[i]) * b[i]);
  return s;
}

void CheckTile(const KernelTable& table, GgmlType type, const TileKernel& tile) {
  ASSERT_NE(tile.fn, nullptr);
  ASSERT_GE(tile.rows, 1);
  ASSERT_GE(tile.cols, 1);
  const GgmlType vdt = table[type].vec_dot_type;
  for (int64_t n : LengthsFor(type)) {
    const Rows x = MakeRows(type, n, tile.rows, 100 + static_cast<uint32_t>(n), 1.0f);
    const Rows y = MakeRows(vdt, n, tile.cols, 900 + static_cast<uint32_t>(n), 0.5f);
    const int64_t ldo = tile.rows + 3;
    std::vector<float> out(static_cast<size_t>(ldo * tile.cols), -1.0f);
    tile.fn(n, x.data.data(), x.stride, y.data.data(), y.stride, out.data(), ldo);
    for (int j = 0; j < tile.cols; ++j) {
      for (int i = 0; i < tile.rows; ++i) {
        const float got = out[static_cast<size_t>(j * ldo + i)];
        const float same = table[type].vec_dot(n, x.Row(i), y.Row(j));
        const float ref = ScalarKernels()[type].vec_dot(n, x.Row(i), y.Row(j));
        const double bound = 1e-5 * AbsSum(x.values[i], y.values[j]) + 1e-30;
        const std::string where = std::string(table.name) + " " + GgmlTypeName(type) +
                                  " n=" + std::to_string(n) + " i=" + std::to_string(i) +
                                  " j=" + std::to_string(j);
        if (IsFloatType(type)) {
          EXPECT_NEAR(got, same, 2 * bound) << where;
        } else {
          EXPECT_EQ(got, same) << where;
        }
        EXPECT_NEAR(got, ref, bound) << where;
      }
      // Output columns between tiles are not the tile's to write.
      for (int64_t i = tile.rows; i < ldo; ++i)
        EXPECT_EQ(out[static_cast<size_t>(j * ldo + i)], -1.0f);
    }
  }
}

class TileTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(TileTest, GemmAndGemvMatchVecDotInEveryTable) {
  const GgmlType type = GetParam();
  for (const KernelTable* table : Tables()) {
    const TypeKernels& k = (*table)[type];
    if (k.gemm.fn != nullptr) {
      EXPECT_GE(k.gemm.cols, 2) << table->name;
      CheckTile(*table, type, k.gemm);
    }
    ASSERT_NE(k.gemv.fn, nullptr) << table->name << " " << GgmlTypeName(type);
    EXPECT_EQ(k.gemv.cols, 1) << table->name;
    CheckTile(*table, type, k.gemv);
  }
}

TEST_P(TileTest, EveryTableTilesEveryWeightType) {
  const GgmlType type = GetParam();
  for (const KernelTable* table : Tables()) {
    EXPECT_NE((*table)[type].gemm.fn, nullptr) << table->name << " " << GgmlTypeName(type);
    EXPECT_NE((*table)[type].gemv.fn, nullptr) << table->name << " " << GgmlTypeName(type);
  }
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, TileTest, ::testing::ValuesIn(testing::kWeightTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(GgmlTypeName(info.param));
                         });

// A VNNI table (either encoding) differs from AVX2 in its int8 products only.
void ExpectSameIntegersAsAvx2(const KernelTable& vnni) {
  const KernelTable* avx2 = Avx2Kernels();
  ASSERT_NE(avx2, nullptr);
  for (GgmlType type : testing::kQuantWeightTypes) {
    EXPECT_NE(vnni[type].vec_dot, (*avx2)[type].vec_dot) << GgmlTypeName(type);
    for (int64_t n : LengthsFor(type)) {
      const Rows x = MakeRows(type, n, 1, 5, 1.0f);
      const Rows y = MakeRows(vnni[type].vec_dot_type, n, 1, 6, 0.5f);
      EXPECT_EQ(vnni[type].vec_dot(n, x.Row(0), y.Row(0)), (*avx2)[type].vec_dot(n, x.Row(0), y.Row(0)))
          << vnni.name << " " << GgmlTypeName(type) << " n=" << n;
    }
  }
}

TEST(KernelTables, VnniImpliesAvx2AndComputesTheSameIntegers) {
  const KernelTable* vnni = AvxVnniKernels();
  if (vnni == nullptr) GTEST_SKIP() << "CPU lacks AVX-VNNI";
  ExpectSameIntegersAsAvx2(*vnni);
}

TEST(KernelTables, Avx512VnniImpliesAvx2AndComputesTheSameIntegers) {
  const KernelTable* vnni = Avx512VnniKernels();
  if (vnni == nullptr) GTEST_SKIP() << "CPU lacks AVX-512 F/BW/VL/VNNI";
  ExpectSameIntegersAsAvx2(*vnni);
  // Its own 512-bit row-group GEMMs, which packed_test holds to the reference's bits.
  for (GgmlType type : testing::kQuantWeightTypes) {
    EXPECT_NE((*vnni)[type].packed_gemm.fn, (*Avx2Kernels())[type].packed_gemm.fn) << GgmlTypeName(type);
  }
}

// The BF16 table is the AVX-512 VNNI one with its own BF16 kernels, which
// vec_dot_test and this file's tile tests compare with the reference.
TEST(KernelTables, Avx512Bf16ChangesOnlyBf16) {
  const KernelTable* bf16 = Avx512Bf16Kernels();
  if (bf16 == nullptr) GTEST_SKIP() << "CPU lacks AVX512_BF16";
  const KernelTable& base = *Avx512VnniKernels();
  for (uint32_t id = 0; id < KernelTable::kMaxTypeId; ++id) {
    const GgmlType type = static_cast<GgmlType>(id);
    const bool changed = bf16->types[id].vec_dot != base.types[id].vec_dot ||
                         bf16->types[id].gemm.fn != base.types[id].gemm.fn ||
                         bf16->types[id].gemv.fn != base.types[id].gemv.fn;
    EXPECT_EQ(changed, type == GgmlType::kBF16) << "type id " << id;
  }
}

}  // namespace
}  // namespace valet
