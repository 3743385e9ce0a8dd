// The CPU's cores by capacity, read from sysfs, and the cores of each
// CoreClass. The sysfs root is a parameter so tests describe a phone (a fake
// tree of cpuN/cpu_capacity files) on any machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "valet/threads.h"

namespace valet {

class CpuTopology {
 public:
  // Reads <sysfs_root>/devices/system/cpu/cpuN/cpu_capacity (the scheduler's
  // relative capacity, as on arm64), else cpuN/cpufreq/cpuinfo_max_freq.
  // Cores without either have capacity 0; none at all reads as one class.
  // At most kMaxCpus cores are read.
  static CpuTopology Read(const std::string& sysfs_root);
  // From capacities by core number (tests, and Read).
  static CpuTopology FromCapacities(std::vector<uint64_t> capacity);

  static constexpr int kMaxCpus = 1024;

  int n_cpus() const { return static_cast<int>(capacity_.size()); }
  uint64_t capacity(int cpu) const { return capacity_[static_cast<size_t>(cpu)]; }
  // Whether the cores differ in capacity.
  bool heterogeneous() const;
  // The cores of a class, ascending; every core for kAll and on a CPU whose
  // cores are alike.
  std::vector<int> Cores(CoreClass cores) const;

 private:
  std::vector<uint64_t> capacity_;  // by core number
};

}  // namespace valet
