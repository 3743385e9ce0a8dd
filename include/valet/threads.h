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

  bool operator==(const StepThreads&) const = default;
};

}  // namespace valet
