// The attention row kernels on f16 rows equal the f32 ones on the widened
// rows bit for bit (so an F16 KV cache gives the same logits whichever path
// a table takes), in every table that has them.
#include <gtest/gtest.h>

#include <cstring>

#include "kernel_test_util.h"
#include "kernels/fp16.h"

namespace valet {
namespace {

TEST(F16Rows, EqualF32KernelsOnWidenedRows) {
  const KernelTable* tables[3];
  const int n_tables = AvailableKernelTables(tables);
  int checked = 0;
  for (int k = 0; k < n_tables; ++k) {
    const KernelTable& t = *tables[k];
    if (t.dot_f16_f32 == nullptr || t.vec_mad_f16 == nullptr) continue;
    ++checked;
    for (int64_t n : {1, 7, 8, 64, 100, 128}) {
      const auto x = testing::RandomRow(n, 3);
      const auto q = testing::RandomRow(n, 4);
      std::vector<uint16_t> h(static_cast<size_t>(n));
      std::vector<float> wide(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        h[i] = Fp32ToFp16(x[i]);
        wide[i] = Fp16ToFp32(h[i]);
      }
      const float a = t.dot_f16_f32(n, h.data(), q.data());
      const float b = t.dot_f32(n, wide.data(), q.data());
      EXPECT_EQ(0, std::memcmp(&a, &b, sizeof(a))) << t.name << " dot, n=" << n;
      std::vector<float> y1 = q, y2 = q;
      t.vec_mad_f16(n, 0.37f, h.data(), y1.data());
      t.vec_mad_f32(n, 0.37f, wide.data(), y2.data());
      EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float))) << t.name << " mad, n=" << n;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no kernel table on this CPU has f16 row kernels";
}

}  // namespace
}  // namespace valet
