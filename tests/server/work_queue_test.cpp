#include "server/work_queue.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <vector>

namespace valet {
namespace {

TEST(WorkQueueTest, RunsTheMostUrgentFirstThenInArrivalOrder) {
  WorkQueue queue(1);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::vector<int> order;
  // Hold the only worker while the rest queue up.
  ASSERT_TRUE(queue.Post(0, [&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
  }));
  const int priorities[] = {3, 1, 2, 1, 0, 3};
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(queue.Post(priorities[i], [&, i] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    }));
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  queue.Stop();  // runs what is queued
  EXPECT_EQ(order, (std::vector<int>{4, 1, 3, 2, 0, 5}));
  EXPECT_FALSE(queue.Post(0, [] {}));
}

}  // namespace
}  // namespace valet
