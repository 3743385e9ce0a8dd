// What running a step below the app's priority costs (ThreadLanes): a step
// that only wakes its pool once, at the app's priority (the baseline), with
// a priority switch before every step (kSwitch: the worst case, the batch's
// top tier changing every step), and handed to a lower lane's lead thread
// (kPoolPerPriority). Run: build/bench/valet_thread_lanes_bench
#include <benchmark/benchmark.h>

#include "common/thread_lanes.h"

namespace valet {
namespace {

constexpr int kThreads = 2;

// One step with one data-parallel job that does nothing.
void EmptyStep(ThreadLanes& lanes) {
  lanes.Run([&] { lanes.pool().Run([](int, int) {}); });
}

void BM_StepAtAppPriority(benchmark::State& state) {
  ThreadLanes lanes(ThreadLanesOptions{kThreads, PriorityMode::kAuto, "/sys"});
  for (auto _ : state) EmptyStep(lanes);
}
BENCHMARK(BM_StepAtAppPriority)->UseRealTime();

void BM_StepSwitchingPriority(benchmark::State& state) {
  if (!ThreadLanes::CanRestorePriority()) {
    state.SkipWithError("this process may not go back to its priority");
    return;
  }
  ThreadLanes lanes(ThreadLanesOptions{kThreads, PriorityMode::kSwitch, "/sys"});
  int nice = 0;
  for (auto _ : state) {
    nice = nice == 0 ? kBackgroundNice : 0;
    (void)lanes
        .Configure(StepThreads{0, nice, CoreClass::kAll,
                               nice == 0 ? SchedPolicy::kNormal : SchedPolicy::kIdle})
        .ok();
    EmptyStep(lanes);
  }
}
BENCHMARK(BM_StepSwitchingPriority)->UseRealTime();

void BM_StepHandedToALowerLane(benchmark::State& state) {
  ThreadLanes lanes(ThreadLanesOptions{kThreads, PriorityMode::kPoolPerPriority, "/sys"});
  (void)lanes.Configure(StepThreads{0, kBackgroundNice, CoreClass::kAll, SchedPolicy::kIdle}).ok();
  for (auto _ : state) EmptyStep(lanes);
}
BENCHMARK(BM_StepHandedToALowerLane)->UseRealTime();

}  // namespace
}  // namespace valet

BENCHMARK_MAIN();
