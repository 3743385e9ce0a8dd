// Batch invariance: a token's output row from MatMul is the same bits whether
// the token is multiplied alone (decode) or inside a batch of any size, at any
// place in it, with any thread count — for every weight type, row-major and
// row-group layouts, on every available kernel table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

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

// MatMulMany's outputs are MatMul's bits, whether its products run as one job
// (row groups of one activation format) or one by one, and its epilogue sees
// every row exactly once, after that row of every output is written.
TEST_P(BatchInvarianceTest, ManyProductsEqualSeparateProducts) {
  const int64_t n_in = 512;
  // Q4_K_M-style mixes: a second type of the same activation format joins the job.
  const GgmlType other = GetParam() == GgmlType::kQ4_K   ? GgmlType::kQ6_K
                         : GetParam() == GgmlType::kQ4_0 ? GgmlType::kQ8_0
                                                         : GetParam();
  const Matrix a = MakeMatrix(GetParam(), n_in, 40, 11);
  const Matrix b = MakeMatrix(other, n_in, 16, 12);
  const Matrix c = MakeMatrix(GetParam(), n_in, 40, 13);
  // Per (token, row) of the 40-row outputs: how often the epilogue saw it and
  // whether both outputs held their values then. Each cell belongs to one
  // unit of work, so no two threads touch the same entry.
  struct Seen {
    std::vector<int> count;
    std::vector<int> written;
    const float* y0;
    const float* y2;
    static void Fn(void* self, Range tokens, Range rows) {
      auto& s = *static_cast<Seen*>(self);
      for (int64_t t = tokens.begin; t < tokens.end; ++t) {
        for (int64_t r = rows.begin; r < rows.end; ++r) {
          const size_t i = static_cast<size_t>(t * 40 + r);
          ++s.count[i];
          // Both outputs are done: neither still holds the fill value.
          s.written[i] = s.y0[i] != -1.0f && s.y2[i] != -1.0f;
        }
      }
    }
  };
  for (const KernelTable* table : Tables()) {
    const MatMulOptions options{MatMulBackend::kNative, table};
    for (bool packed : {false, true}) {
      if (packed && (a.packed.empty() || b.packed.empty())) continue;
      const WeightMatrix& wa = packed ? a.w_packed : a.w;
      const WeightMatrix& wb = packed ? b.w_packed : b.w;
      const WeightMatrix& wc = packed ? c.w_packed : c.w;
      for (int64_t tokens : {1, 5, 70}) {
        const auto x = RandomRow(tokens * n_in, 21);
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          MatMulScratch scratch;
          std::vector<float> want_a(static_cast<size_t>(tokens * 40)), want_b(static_cast<size_t>(tokens * 16));
          std::vector<float> want_c(want_a.size());
          MatMul(wa, x.data(), tokens, want_a.data(), pool, scratch, options);
          MatMul(wb, x.data(), tokens, want_b.data(), pool, scratch, options);
          MatMul(wc, x.data(), tokens, want_c.data(), pool, scratch, options);
          std::vector<float> ya(want_a.size(), -1.0f), yb(want_b.size(), -1.0f), yc(want_c.size(), -1.0f);
          const MatMulOutput three[] = {{&wa, ya.data()}, {&wb, yb.data()}, {&wc, yc.data()}};
          MatMulMany(three, x.data(), tokens, pool, scratch, {}, options);
          const std::string what = std::string(table->name) + " " + GgmlTypeName(GetParam()) +
                                   (packed ? " row groups, " : " rows, ") + std::to_string(tokens) +
                                   " tokens, " + std::to_string(threads) + " threads";
          EXPECT_EQ(0, std::memcmp(ya.data(), want_a.data(), ya.size() * sizeof(float))) << what;
          EXPECT_EQ(0, std::memcmp(yb.data(), want_b.data(), yb.size() * sizeof(float))) << what;
          EXPECT_EQ(0, std::memcmp(yc.data(), want_c.data(), yc.size() * sizeof(float))) << what;

          std::fill(ya.begin(), ya.end(), -1.0f);
          std::fill(yc.begin(), yc.end(), -1.0f);
          const size_t cells = static_cast<size_t>(tokens) * 40;
          Seen seen{std::vector<int>(cells, 0), std::vector<int>(cells, 0), ya.data(), yc.data()};
          const MatMulOutput two[] = {{&wa, ya.data()}, {&wc, yc.data()}};
          MatMulMany(two, x.data(), tokens, pool, scratch, RowsEpilogue{Seen::Fn, &seen}, options);
          EXPECT_EQ(0, std::memcmp(ya.data(), want_a.data(), ya.size() * sizeof(float))) << what;
          EXPECT_EQ(0, std::memcmp(yc.data(), want_c.data(), yc.size() * sizeof(float))) << what;
          EXPECT_EQ(seen.count, std::vector<int>(cells, 1)) << what;
          EXPECT_EQ(seen.written, std::vector<int>(cells, 1)) << what;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, BatchInvarianceTest,
                         ::testing::ValuesIn(testing::kWeightTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(GgmlTypeName(info.param));
                         });

}  // namespace
}  // namespace valet
