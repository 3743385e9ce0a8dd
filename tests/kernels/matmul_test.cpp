// MatMul against a double-precision reference over dequantized weights, for
// every weight type, several shapes, batch sizes and thread counts.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernel_test_util.h"

namespace valet {
namespace {

using testing::Decode;
using testing::Encode;
using testing::RandomRow;

struct Weights {
  std::vector<uint8_t> data;
  std::vector<float> dequant;  // [n_out][n_in]
  WeightMatrix w;
};

Weights MakeWeights(GgmlType type, int64_t n_in, int64_t n_out, uint32_t seed) {
  Weights m;
  const auto f = RandomRow(n_in * n_out, seed, 0.1f);
  m.data =
      Encode(ScalarKernels(), type, f);  // rows are whole blocks, so the flat encode is row-wise
  m.dequant = Decode(ScalarKernels(), type, m.data, n_in * n_out);
  m.w = WeightMatrix{type, n_in, n_out, m.data.data(), GgmlRowSize(type, n_in)};
  return m;
}

// y[t][r] in double over the given (possibly pre-rounded) activations.
std::vector<double> Reference(const Weights& m, const std::vector<float>& x, int64_t n_tokens) {
  const int64_t n_in = m.w.n_in, n_out = m.w.n_out;
  std::vector<double> y(static_cast<size_t>(n_tokens * n_out));
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t r = 0; r < n_out; ++r) {
      double s = 0;
      for (int64_t i = 0; i < n_in; ++i)
        s += static_cast<double>(m.dequant[r * n_in + i]) * x[t * n_in + i];
      y[t * n_out + r] = s;
    }
  }
  return y;
}

// The activations as the weight's vec_dot type sees them (quantized, or f16-rounded).
std::vector<float> AsVecDotType(GgmlType type, const std::vector<float>& x) {
  const GgmlType vdt = ScalarKernels()[type].vec_dot_type;
  if (vdt == GgmlType::kF32) return x;
  return Decode(ScalarKernels(), vdt, Encode(ScalarKernels(), vdt, x),
                static_cast<int64_t>(x.size()));
}

double AbsScale(const Weights& m, const std::vector<float>& x, int64_t t, int64_t r) {
  double s = 0;
  for (int64_t i = 0; i < m.w.n_in; ++i)
    s += std::fabs(static_cast<double>(m.dequant[r * m.w.n_in + i]) * x[t * m.w.n_in + i]);
  return s;
}

struct Shape {
  int64_t n_in, n_out;
};

class MatMulTest : public ::testing::TestWithParam<GgmlType> {};

using testing::Tables;

// Every available table, with shapes that leave edge rows and tokens outside
// the tiles (n_out % rows, n_tokens % cols) and thread splits that differ.
TEST_P(MatMulTest, NativeMatchesReferenceAndIsThreadCountInvariant) {
  const GgmlType type = GetParam();
  ThreadPool one(1), two(2);
  MatMulScratch scratch;
  for (const KernelTable* table : Tables()) {
    const MatMulOptions native{MatMulBackend::kNative, table};
    for (Shape s : {Shape{256, 5}, Shape{512, 33}, Shape{768, 64}}) {
      const Weights m = MakeWeights(type, s.n_in, s.n_out, 42);
      for (int64_t n_tokens : {1, 3, 17, 64}) {
        const auto x = RandomRow(n_tokens * s.n_in, static_cast<uint32_t>(n_tokens));
        const auto xq = AsVecDotType(type, x);
        const auto want = Reference(m, xq, n_tokens);
        const auto want_raw = Reference(m, x, n_tokens);
        std::vector<float> y1(static_cast<size_t>(n_tokens * s.n_out)), y2(y1.size());
        MatMul(m.w, x.data(), n_tokens, y1.data(), one, scratch, native);
        MatMul(m.w, x.data(), n_tokens, y2.data(), two, scratch, native);
        ASSERT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)))
            << GgmlTypeName(type) << " differs across thread counts, n_tokens=" << n_tokens;
        for (int64_t t = 0; t < n_tokens; ++t) {
          for (int64_t r = 0; r < s.n_out; ++r) {
            const size_t i = static_cast<size_t>(t * s.n_out + r);
            // Against the activations as quantized: rounding only.
            const double offset = testing::Q8_1OffsetBound(
                ScalarKernels()[type].vec_dot_type, &m.dequant[static_cast<size_t>(r * s.n_in)],
                &xq[static_cast<size_t>(t * s.n_in)], s.n_in);
            ASSERT_NEAR(y1[i], want[i], 1e-4 * AbsScale(m, xq, t, r) + offset + 1e-30)
                << GgmlTypeName(type) << " t=" << t << " r=" << r << " n_tokens=" << n_tokens;
            // Against the raw activations: within activation quantization error.
            ASSERT_NEAR(y1[i], want_raw[i], 2e-2 * AbsScale(m, x, t, r) + 1e-30)
                << GgmlTypeName(type);
          }
        }
      }
    }
  }
}

// Tiles reuse vec_dot's per-block float operations, so for the integer types
// MatMul (tiles plus vec_dot at the edges) equals vec_dot for every pair.
TEST(MatMulTiles, IntegerTypesEqualPerPairVecDot) {
  ThreadPool pool(2);
  MatMulScratch scratch;
  for (GgmlType type : testing::kQuantWeightTypes) {
    for (const KernelTable* table : Tables()) {
      const Weights m = MakeWeights(type, 512, 37, 11);
      for (int64_t n_tokens : {1, 2, 5, 19}) {
        const auto x = RandomRow(n_tokens * 512, 100 + static_cast<uint32_t>(n_tokens));
        std::vector<float> y(static_cast<size_t>(n_tokens * 37));
        MatMul(m.w, x.data(), n_tokens, y.data(), pool, scratch,
               MatMulOptions{MatMulBackend::kNative, table});
        const GgmlType vdt = (*table)[type].vec_dot_type;
        for (int64_t t = 0; t < n_tokens; ++t) {
          const std::vector<float> row(x.begin() + t * 512, x.begin() + (t + 1) * 512);
          const auto act = Encode(*table, vdt, row);
          for (int64_t r = 0; r < 37; ++r) {
            ASSERT_EQ(y[static_cast<size_t>(t * 37 + r)],
                      (*table)[type].vec_dot(512, m.w.Row(r), act.data()))
                << table->name << " " << GgmlTypeName(type) << " t=" << t << " r=" << r;
          }
        }
      }
    }
  }
}

TEST_P(MatMulTest, BlasBackendMatchesReferenceOnRawActivations) {
  if (!BlasAvailable()) GTEST_SKIP() << "built without BLAS";
  const GgmlType type = GetParam();
  ThreadPool pool(2);
  MatMulScratch scratch;
  const Weights m = MakeWeights(type, 512, 48, 7);
  const int64_t n_tokens = 17;
  const auto x = RandomRow(n_tokens * 512, 5);
  const auto want = Reference(m, x, n_tokens);
  std::vector<float> y(static_cast<size_t>(n_tokens * 48));
  MatMul(m.w, x.data(), n_tokens, y.data(), pool, scratch,
         MatMulOptions{MatMulBackend::kBlas, nullptr});
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t r = 0; r < 48; ++r) {
      ASSERT_NEAR(y[t * 48 + r], want[t * 48 + r], 1e-5 * AbsScale(m, x, t, r) + 1e-30)
          << GgmlTypeName(type);
    }
  }
}

TEST_P(MatMulTest, ScalarAndActiveKernelsAgree) {
  const GgmlType type = GetParam();
  ThreadPool pool(2);
  MatMulScratch scratch;
  const Weights m = MakeWeights(type, 512, 20, 9);
  const int64_t n_tokens = 3;
  const auto x = RandomRow(n_tokens * 512, 8);
  std::vector<float> ya(60), ys(60);
  MatMul(m.w, x.data(), n_tokens, ya.data(), pool, scratch,
         MatMulOptions{MatMulBackend::kNative, nullptr});
  MatMul(m.w, x.data(), n_tokens, ys.data(), pool, scratch,
         MatMulOptions{MatMulBackend::kNative, &ScalarKernels()});
  for (size_t i = 0; i < ya.size(); ++i) {
    const int64_t t = static_cast<int64_t>(i) / 20, r = static_cast<int64_t>(i) % 20;
    ASSERT_NEAR(ya[i], ys[i], 1e-5 * AbsScale(m, x, t, r) + 1e-30) << GgmlTypeName(type);
  }
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, MatMulTest, ::testing::ValuesIn(testing::kWeightTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(GgmlTypeName(info.param));
                         });

TEST(GetRows, ReturnsDequantizedRows) {
  for (GgmlType type : testing::kWeightTypes) {
    const Weights m = MakeWeights(type, 256, 10, 3);
    const std::vector<int32_t> ids = {7, 0, 7, 9};
    std::vector<float> out(ids.size() * 256);
    GetRows(m.w, ids, out.data());
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int64_t j = 0; j < 256; ++j) {
        ASSERT_EQ(out[i * 256 + j], m.dequant[ids[i] * 256 + j]) << GgmlTypeName(type);
      }
    }
  }
}

}  // namespace
}  // namespace valet
