// Batch invariance: a token's output row from MatMul is the same bits whether
// the token is multiplied alone (decode) or inside a batch of any size, at any
// place in it, with any thread count — for every weight type, row-major and
// row-group layouts, on every available kernel table.
#include <gtest/gtest.h>

#include <cstring>

#include "kernel_test_util.h"
#include "kernels/matmul.h"
#include "kernels/weight_pack.h"

namespace valet {
namespace {

using testing::RandomRow;
using testing::Tables;

struct Matrix {
  std::vector<uint8_t> rows;
  std::vector<uint8_t> packed;  // empty when the type has no row-group layout
  WeightMatrix w;
  WeightMatrix w_packed;
};

Matrix MakeMatrix(GgmlType type, int64_t n_in, int64_t n_out, uint32_t seed) {
  Matrix m;
  m.rows = testing::Encode(ScalarKernels(), type, RandomRow(n_in * n_out, seed, 0.1f));
  m.w = WeightMatrix{type, n_in, n_out, m.rows.data(), GgmlRowSize(type, n_in)};
  if (CanPack(m.w)) {
    m.packed.resize(PackedBytes(m.w));
    m.w_packed = PackWeights(m.w, m.packed.data());
  }
  return m;
}

// Every row of a 64-token activation, multiplied alone, must reappear bit for
// bit in batches of several sizes cut from the same activations at several
// offsets, with 1, 2 and 3 threads.
void ExpectBatchInvariant(const WeightMatrix& w, const KernelTable& table, const char* what) {
  constexpr int64_t kTokens = 64;
  const int64_t n_in = w.n_in, n_out = w.n_out;
  const auto x = RandomRow(kTokens * n_in, 7);
  const MatMulOptions options{MatMulBackend::kNative, &table};
  MatMulScratch scratch;
  ThreadPool one(1);
  std::vector<float> alone(static_cast<size_t>(kTokens * n_out));
  for (int64_t t = 0; t < kTokens; ++t)
    MatMul(w, x.data() + t * n_in, 1, alone.data() + t * n_out, one, scratch, options);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t batch : {1, 3, 8, 17, 64}) {
      for (int64_t first = 0; first + batch <= kTokens; first += batch == 1 ? 29 : batch + 5) {
        std::vector<float> y(static_cast<size_t>(batch * n_out));
        MatMul(w, x.data() + first * n_in, batch, y.data(), pool, scratch, options);
        ASSERT_EQ(0, std::memcmp(y.data(), alone.data() + first * n_out, y.size() * sizeof(float)))
            << table.name << " " << GgmlTypeName(w.type) << " " << what << ": batch " << batch
            << " from token " << first << ", " << threads << " threads";
      }
    }
  }
}

class BatchInvarianceTest : public ::testing::TestWithParam<GgmlType> {};

// 40 rows: whole row groups of 8 and a tail past the 16-row tiles; 512
// columns: two K-quant super-blocks.
TEST_P(BatchInvarianceTest, RowsAloneEqualRowsInBatches) {
  const Matrix m = MakeMatrix(GetParam(), 512, 40, 3);
  for (const KernelTable* table : Tables()) {
    ExpectBatchInvariant(m.w, *table, "rows");
    if (!m.packed.empty()) ExpectBatchInvariant(m.w_packed, *table, "row groups");
  }
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, BatchInvarianceTest,
                         ::testing::ValuesIn(testing::kWeightTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(GgmlTypeName(info.param));
                         });

}  // namespace
}  // namespace valet
