// How one step's compute threads run: how many, at what OS priority and on
// which cores. The scheduler sets them per step from the budget of the
// highest tier in the batch (docs/governor.md), so background work yields the
// CPU to the app's UI thread and stays off the big cores.
#pragma once

#include <cstdint>

#include "valet/export.h"
#include "valet/status.h"

namespace valet {

// The cores of a heterogeneous CPU (big.LITTLE, DynamIQ) by class, from each
// core's capacity (sysfs cpu_capacity, else cpufreq/cpuinfo_max_freq). On a
// CPU whose cores are all alike every class is every core.
enum class CoreClass : int32_t {
  kAll = 0,      // every core the process may use
  kPerformance,  // every core but the slowest cluster's (a 1+3+4 phone: the 1+3)
  kEfficiency,   // the slowest cluster (the 4)
};
VALET_API const char* CoreClassName(CoreClass cores);  // "all", "performance", "efficiency"
// InvalidArgument for any other name.
VALET_API Result<CoreClass> CoreClassFromName(const char* name);

// The Linux scheduling policy of a step's threads. kIdle (SCHED_IDLE) runs
// only on a core nothing else wants: the app's threads always take the core
// at once, and a waking background thread never preempts them (measured:
// `valet bench-jank`, docs/governor.md). kBatch (SCHED_BATCH) keeps the
// nice value's share but never preempts on waking.
enum class SchedPolicy : int32_t { kNormal = 0, kBatch, kIdle };
VALET_API const char* SchedPolicyName(SchedPolicy policy);  // "normal", "batch", "idle"
// InvalidArgument for any other name.
VALET_API Result<SchedPolicy> SchedPolicyFromName(const char* name);

// Linux nice values a step may ask for: 0 is the app's own priority (the
// threads as the app created them), 1..19 lower priorities. Android's
// THREAD_PRIORITY_BACKGROUND is 10. Nothing valet runs is ever raised above
// the app's priority.
inline constexpr int32_t kMaxStepNice = 19;
inline constexpr int32_t kBackgroundNice = 10;

struct StepThreads {
  int32_t n_threads = 0;  // 0: every thread of the engine; never more than the class has cores
  int32_t nice = 0;       // 0..kMaxStepNice
  CoreClass cores = CoreClass::kAll;
  SchedPolicy policy = SchedPolicy::kNormal;  // kNormal with nice 0 is the app's priority

  bool operator==(const StepThreads&) const = default;
};

}  // namespace valet
