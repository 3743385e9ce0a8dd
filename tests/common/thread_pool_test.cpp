#include "common/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <vector>

namespace valet {
namespace {

TEST(ThreadPoolTest, EveryThreadRunsEachJobOnce) {
  for (int n : {1, 2, 4}) {
    ThreadPool pool(n);
    ASSERT_EQ(pool.size(), n);
    for (int job = 0; job < 200; ++job) {
      std::vector<std::atomic<int>> hits(n);
      pool.Run([&](int ith, int nth) {
        ASSERT_EQ(nth, n);
        hits[ith].fetch_add(1);
      });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "thread " << i << " job " << job;
    }
  }
}

TEST(ThreadPoolTest, ActiveCountLimitsTheThreadsOfEachJob) {
  ThreadPool pool(4);
  for (int active : {1, 3, 2, 4, 1, 4}) {
    pool.set_active(active);
    ASSERT_EQ(pool.active(), active);
    for (int job = 0; job < 100; ++job) {
      std::vector<std::atomic<int>> hits(4);
      pool.Run([&](int ith, int nth) {
        ASSERT_EQ(nth, active);
        hits[ith].fetch_add(1);
      });
      for (int i = 0; i < 4; ++i) ASSERT_EQ(hits[i].load(), i < active ? 1 : 0) << "thread " << i << " active " << active;
    }
  }
  pool.set_active(0);
  EXPECT_EQ(pool.active(), 1);
  pool.set_active(99);
  EXPECT_EQ(pool.active(), 4);
}

TEST(ThreadPoolTest, SplitRangeCoversEveryItemExactlyOnce) {
  for (int64_t n : {0, 1, 5, 64, 1001}) {
    for (int nth : {1, 2, 3, 8}) {
      std::vector<int> seen(n, 0);
      for (int ith = 0; ith < nth; ++ith) {
        Range r = SplitRange(n, ith, nth);
        ASSERT_LE(r.begin, r.end);
        for (int64_t i = r.begin; i < r.end; ++i) seen[i]++;
      }
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "n=" << n << " nth=" << nth;
    }
  }
}

TEST(ThreadPoolTest, ResultsAreVisibleToTheCallerAfterRun) {
  ThreadPool pool(2);
  std::vector<int64_t> data(10000);
  pool.Run([&](int ith, int nth) {
    Range r = SplitRange(static_cast<int64_t>(data.size()), ith, nth);
    for (int64_t i = r.begin; i < r.end; ++i) data[i] = i * 2;
  });
  EXPECT_EQ(std::accumulate(data.begin(), data.end(), int64_t{0}), 9999LL * 10000);
}

}  // namespace
}  // namespace valet
