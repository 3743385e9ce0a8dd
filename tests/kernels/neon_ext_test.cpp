// The NEON tables that need an architecture extension (dotprod, i8mm), against
// the scalar reference bit for bit: Q8_0 and Q4_0 vec_dot, gemm and gemv
// tiles. scripts/test.sh runs this under qemu-aarch64 as a CPU without either
// extension, one with dotprod only and one with both.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernel_table.h"

namespace valet {
namespace {

#if defined(__aarch64__)
using testing::Encode;
using testing::RandomRow;

// `count` rows of `type`, each `stride` bytes apart with a padding block in
// between, so a tile that ignored the stride would read the wrong data.
struct Rows {
  std::vector<uint8_t> data;
  size_t stride = 0;
  const uint8_t* Row(int i) const { return data.data() + static_cast<size_t>(i) * stride; }
};

Rows MakeRows(GgmlType type, int64_t n, int count, uint32_t seed) {
  Rows r;
  r.stride = GgmlRowSize(type, n) + GgmlRowSize(type, 32);
  r.data.assign(r.stride * static_cast<size_t>(count), 0xa5);
  for (int i = 0; i < count; ++i) {
    const auto enc = Encode(ScalarKernels(), type, RandomRow(n, seed + static_cast<uint32_t>(i)));
    std::memcpy(r.data.data() + static_cast<size_t>(i) * r.stride, enc.data(), enc.size());
  }
  return r;
}

void ExpectTileMatchesScalar(const TileKernel& tile, GgmlType type, int64_t n, const Rows& w, const Rows& a) {
  ASSERT_NE(tile.fn, nullptr) << GgmlTypeName(type);
  const int64_t ldo = tile.rows + 3;
  std::vector<float> out(static_cast<size_t>(ldo * tile.cols), -1.0f);
  tile.fn(n, w.data.data(), w.stride, a.data.data(), a.stride, out.data(), ldo);
  for (int c = 0; c < tile.cols; ++c) {
    for (int r = 0; r < tile.rows; ++r) {
      EXPECT_EQ(out[static_cast<size_t>(c * ldo + r)], ScalarKernels()[type].vec_dot(n, w.Row(r), a.Row(c)))
          << GgmlTypeName(type) << " n=" << n << " row " << r << " col " << c << " of " << tile.rows << "x"
          << tile.cols;
    }
  }
}

void ExpectMatchesScalar(const KernelTable& table) {
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    for (int64_t n : {32, 64, 320, 2048}) {
      const Rows w = MakeRows(type, n, 4, 11);
      const Rows a = MakeRows(GgmlType::kQ8_0, n, 4, 101);
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(table[type].vec_dot(n, w.Row(i), a.Row(i)), ScalarKernels()[type].vec_dot(n, w.Row(i), a.Row(i)))
            << table.name << " " << GgmlTypeName(type) << " n=" << n;
      }
      ExpectTileMatchesScalar(table[type].gemm, type, n, w, a);
      ExpectTileMatchesScalar(table[type].gemv, type, n, w, a);
    }
  }
}
#endif  // __aarch64__

TEST(NeonExtensions, DotprodTableMatchesScalar) {
#if defined(__aarch64__)
  if (NeonDotprodKernels() == nullptr) GTEST_SKIP() << "this CPU lacks dotprod (no HWCAP_ASIMDDP)";
  EXPECT_STREQ(NeonDotprodKernels()->name, "neon_dotprod");
  ExpectMatchesScalar(*NeonDotprodKernels());
#else
  EXPECT_EQ(NeonDotprodKernels(), nullptr);
  GTEST_SKIP() << "not an AArch64 build: the NEON dotprod table does not exist";
#endif
}

TEST(NeonExtensions, I8mmTableMatchesScalar) {
#if defined(__aarch64__)
  if (NeonI8mmKernels() == nullptr) GTEST_SKIP() << "this CPU lacks i8mm (no HWCAP2_I8MM)";
  EXPECT_STREQ(NeonI8mmKernels()->name, "neon_i8mm");
  ExpectMatchesScalar(*NeonI8mmKernels());
  // Its own SMMLA row-group GEMMs, which packed_test holds to the reference's bits.
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ8_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                        GgmlType::kIQ4_NL}) {
    EXPECT_NE((*NeonI8mmKernels())[type].packed_gemm.fn, (*NeonDotprodKernels())[type].packed_gemm.fn)
        << GgmlTypeName(type);
  }
#else
  EXPECT_EQ(NeonI8mmKernels(), nullptr);
  GTEST_SKIP() << "not an AArch64 build: the NEON i8mm table does not exist";
#endif
}

}  // namespace
}  // namespace valet
