// The int8 multiply-accumulate peak of a kernel table's widest int8
// instruction on this CPU: the ceiling prefill's GEMMs can approach
// (issue 21). Measured, not looked up: a throughput loop of independent
// accumulators, the median of several runs, on one thread and on N.
// Ops count one multiply-add as 2, as GOP/s figures for GEMMs do.
#pragma once

#include <optional>

#include "kernels/kernel_table.h"

namespace valet {

struct Int8Peak {
  const char* instruction = "";  // e.g. "vpdpbusd zmm"
  double gops_per_core = 0.0;    // one thread
  double gops_threads = 0.0;     // `threads` threads together
  int threads = 0;
};

// `table` must be one the running CPU supports (kernel_table.h's getters
// return only those). nullopt for a table without an int8 instruction
// (scalar). Takes about reps x 0.1 s.
std::optional<Int8Peak> MeasureInt8Peak(const KernelTable& table, int threads, int reps = 5);

}  // namespace valet
