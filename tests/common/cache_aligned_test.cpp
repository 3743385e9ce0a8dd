#include "common/cache_aligned.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace valet {
namespace {

bool OnCacheLine(const void* p) { return reinterpret_cast<uintptr_t>(p) % kCacheLineBytes == 0; }

TEST(CacheAlignedTest, VectorsAndBytesStartOnACacheLineAtEverySize) {
  // Small sizes come from malloc's arenas, large ones from mmap (16 bytes past a page).
  for (size_t n : {size_t{1}, size_t{3}, size_t{100}, size_t{4096}, size_t{1} << 20, (size_t{1} << 22) + 5}) {
    CacheAlignedVector<float> v(n, 1.0f);
    EXPECT_TRUE(OnCacheLine(v.data())) << n;
    v.resize(n * 2 + 1);
    EXPECT_TRUE(OnCacheLine(v.data())) << n;
    EXPECT_EQ(v[n - 1], 1.0f);
    CacheAlignedBytes b = MakeCacheAlignedBytes(n);
    EXPECT_TRUE(OnCacheLine(b.get())) << n;
  }
}

TEST(CacheAlignedTest, RoundsUpToWholeLines) {
  EXPECT_EQ(RoundUpToCacheLine(0), 0u);
  EXPECT_EQ(RoundUpToCacheLine(1), kCacheLineBytes);
  EXPECT_EQ(RoundUpToCacheLine(kCacheLineBytes), kCacheLineBytes);
  EXPECT_EQ(RoundUpToCacheLine(kCacheLineBytes + 1), 2 * kCacheLineBytes);
}

}  // namespace
}  // namespace valet
