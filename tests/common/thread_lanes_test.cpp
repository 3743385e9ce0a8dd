// Steps run at the priority and on the cores they ask for, read back from the
// threads that computed them (getpriority, sched_getscheduler, sched_getaffinity), with a fake
// sysfs that makes two of this machine's cores a little and a big one; both
// ways of lowering a priority work (one pool re-niced, a pool per priority
// where lowering it again is refused); and threads sleep between steps.
#include "common/thread_lanes.h"

#include <gtest/gtest.h>

#if defined(__linux__)
#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "support/fake_phone.h"

namespace valet {
namespace {

#if defined(__linux__)

struct Seen {
  int tid = 0;
  int nice = 0;
  int policy = SCHED_OTHER;
  std::vector<int> cores;
};

// One step: every thread of its pool job says where it runs.
std::vector<Seen> RunStep(ThreadLanes& lanes) {
  std::vector<Seen> seen;
  lanes.Run([&] {
    seen.resize(static_cast<size_t>(lanes.pool().active()));
    lanes.pool().Run([&](int ith, int) {
      const int tid = ThreadPool::CurrentTid();
      seen[static_cast<size_t>(ith)] =
          Seen{tid, NiceOf(tid), sched_getscheduler(tid), CoresOf(tid)};
    });
  });
  return seen;
}

class ThreadLanesTest : public ::testing::TestWithParam<PriorityMode> {};

TEST_P(ThreadLanesTest, EachStepRunsAtItsPriorityOnItsCores) {
  const PriorityMode mode = GetParam();
  if (mode == PriorityMode::kSwitch && !ThreadLanes::CanRestorePriority()) {
    GTEST_SKIP() << "this process may not go back to its priority (no CAP_SYS_NICE, RLIMIT_NICE 0)";
  }
  FakePhone phone = MakeFakePhone();
  if (phone.little < 0) GTEST_SKIP() << "one core: nothing to confine steps to";
  const int self = ThreadPool::CurrentTid();
  const int app_nice = NiceOf(self);
  ASSERT_LT(app_nice, kBackgroundNice);

  ThreadLanes lanes(ThreadLanesOptions{2, mode, phone.sysfs->root()});
  for (SchedPolicy policy :
       {SchedPolicy::kIdle, SchedPolicy::kNormal, SchedPolicy::kBatch, SchedPolicy::kIdle}) {
    ASSERT_TRUE(
        lanes.Configure(StepThreads{0, kBackgroundNice, CoreClass::kEfficiency, policy}).ok());
    std::vector<Seen> bg = RunStep(lanes);
    ASSERT_EQ(bg.size(), 1u);  // one little core: one thread
    EXPECT_EQ(bg[0].nice, kBackgroundNice);
    EXPECT_EQ(bg[0].policy, policy == SchedPolicy::kIdle    ? SCHED_IDLE
                            : policy == SchedPolicy::kBatch ? SCHED_BATCH
                                                            : SCHED_OTHER);
    EXPECT_EQ(bg[0].cores, std::vector<int>{phone.little});
    EXPECT_EQ(bg[0].tid == self, mode == PriorityMode::kSwitch);
    EXPECT_EQ(lanes.last_step_tids().front(), bg[0].tid);

    ASSERT_TRUE(lanes.Configure(StepThreads{0, 0, CoreClass::kPerformance}).ok());
    std::vector<Seen> fg = RunStep(lanes);
    ASSERT_EQ(fg.size(), std::min<size_t>(2, phone.big.size()));
    EXPECT_EQ(fg[0].tid, self);
    for (const Seen& s : fg) {
      EXPECT_EQ(s.nice, app_nice);
      EXPECT_EQ(s.policy, SCHED_OTHER);
      EXPECT_EQ(s.cores, phone.big);
    }
  }
  ASSERT_TRUE(lanes.Configure(StepThreads{0, 0, CoreClass::kAll}).ok());
  for (const Seen& s : RunStep(lanes)) EXPECT_EQ(s.cores, phone.allowed);
  EXPECT_EQ(lanes.mode(), mode);
  EXPECT_EQ(NiceOf(self), app_nice);
  EXPECT_EQ(sched_getscheduler(self), SCHED_OTHER);
  EXPECT_EQ(CoresOf(self), phone.allowed);
}

INSTANTIATE_TEST_SUITE_P(Modes, ThreadLanesTest,
                         ::testing::Values(PriorityMode::kSwitch, PriorityMode::kPoolPerPriority),
                         [](const ::testing::TestParamInfo<PriorityMode>& info) {
                           return info.param == PriorityMode::kSwitch
                                      ? std::string("Switch")
                                      : std::string("PoolPerPriority");
                         });

// Capabilities are per thread: this one loses CAP_SYS_NICE (a no-op where the
// process never had it), and RLIMIT_NICE allows no way back, as in an app.
bool DropSysNice() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  data[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
  return syscall(SYS_capset, &header, data) == 0;
}

TEST(ThreadLanesAutoTest, KeepsAPoolPerPriorityWhereLoweringIsRefused) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NICE, &saved), 0);
  rlimit none = saved;
  none.rlim_cur = 0;
  ASSERT_EQ(setrlimit(RLIMIT_NICE, &none), 0);
  std::thread app([] {
    ASSERT_TRUE(DropSysNice());
    EXPECT_FALSE(ThreadLanes::CanRestorePriority());
    const int self = ThreadPool::CurrentTid();
    const int app_nice = NiceOf(self);
    ThreadLanes lanes(ThreadLanesOptions{2, PriorityMode::kAuto, "/nonexistent-sysfs"});
    for (int round = 0; round < 2; ++round) {
      ASSERT_TRUE(lanes
                      .Configure(StepThreads{0, kBackgroundNice, CoreClass::kEfficiency,
                                             SchedPolicy::kIdle})
                      .ok());
      for (const Seen& s : RunStep(lanes)) {
        EXPECT_EQ(s.nice, std::max(app_nice, kBackgroundNice));
        EXPECT_EQ(s.policy, SCHED_IDLE);
        EXPECT_NE(s.tid, self);
      }
      EXPECT_EQ(lanes.mode(), PriorityMode::kPoolPerPriority);
      ASSERT_TRUE(lanes.Configure(StepThreads{0, 0, CoreClass::kAll}).ok());
      std::vector<Seen> fg = RunStep(lanes);
      EXPECT_EQ(fg[0].tid, self);
      for (const Seen& s : fg) {
        EXPECT_EQ(s.nice, app_nice);
        EXPECT_EQ(s.policy, SCHED_OTHER);
      }
    }
  });
  app.join();
  ASSERT_EQ(setrlimit(RLIMIT_NICE, &saved), 0);
}

TEST(ThreadLanesAutoTest, SwitchesOnePoolWhereLoweringIsAllowed) {
  if (!ThreadLanes::CanRestorePriority())
    GTEST_SKIP() << "this process may not go back to its priority";
  const int app_nice = NiceOf(ThreadPool::CurrentTid());
  ThreadLanes lanes(ThreadLanesOptions{2, PriorityMode::kAuto, "/nonexistent-sysfs"});
  EXPECT_EQ(lanes.mode(),
            PriorityMode::kAuto);  // decided at the first step below the app's priority
  ASSERT_TRUE(
      lanes.Configure(StepThreads{0, kBackgroundNice, CoreClass::kAll, SchedPolicy::kIdle}).ok());
  EXPECT_EQ(RunStep(lanes)[0].tid, ThreadPool::CurrentTid());
  EXPECT_EQ(lanes.mode(), PriorityMode::kSwitch);
  ASSERT_TRUE(lanes.Configure(StepThreads{}).ok());
  const Seen fg = RunStep(lanes)[0];
  EXPECT_EQ(fg.nice, app_nice);
  EXPECT_EQ(fg.policy, SCHED_OTHER);
  EXPECT_EQ(NiceOf(ThreadPool::CurrentTid()), app_nice);
}

TEST(ThreadLanesTest, RefusesWhatNoStepCanAskFor) {
  ThreadLanes lanes(ThreadLanesOptions{2, PriorityMode::kAuto, "/nonexistent-sysfs"});
  EXPECT_FALSE(lanes.Configure(StepThreads{-1, 0, CoreClass::kAll}).ok());
  EXPECT_FALSE(lanes.Configure(StepThreads{1, -1, CoreClass::kAll}).ok());
  EXPECT_FALSE(lanes.Configure(StepThreads{1, kMaxStepNice + 1, CoreClass::kAll}).ok());
  ASSERT_TRUE(lanes.Configure(StepThreads{64, 0, CoreClass::kAll}).ok());  // more than it has: all
  EXPECT_EQ(RunStep(lanes).size(), 2u);
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// An engine between requests: a short step now and then, the thread that
// runs them blocked in between. Spinning workers (or a background lane's
// threads) would burn a core each through every gap; these may only spin
// briefly after each step. The gaps are the idle time being measured, not a
// wait for anything.
TEST(ThreadLanesIdleTest, ThreadsSleepBetweenSteps) {
  ThreadLanes lanes(ThreadLanesOptions{2, PriorityMode::kPoolPerPriority, "/nonexistent-sysfs"});
  ASSERT_TRUE(lanes.Configure(StepThreads{0, kBackgroundNice, CoreClass::kAll}).ok());
  RunStep(lanes);  // the background lane exists and idles from here on
  ASSERT_TRUE(lanes.Configure(StepThreads{}).ok());
  constexpr int kSteps = 40;
  constexpr auto kGap = std::chrono::milliseconds(5);
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kSteps; ++i) {
    RunStep(lanes);
    std::this_thread::sleep_for(kGap);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;
  // Measured 2-4% of one core on a loaded machine; spinning through the gaps
  // would be >= 100%.
  EXPECT_LT(cpu, 0.25 * wall) << "CPU " << cpu << " s over " << wall << " s of mostly idle steps";
}

#endif  // __linux__

}  // namespace
}  // namespace valet
