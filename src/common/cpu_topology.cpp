#include "common/cpu_topology.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

namespace valet {
namespace {

// The first number in a small sysfs file; 0 when it is missing or unreadable.
uint64_t ReadNumber(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return 0;
  unsigned long long v = 0;
  if (std::fscanf(f, "%llu", &v) != 1) v = 0;
  std::fclose(f);
  return v;
}

bool Exists(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  std::fclose(f);
  return true;
}

}  // namespace

CpuTopology CpuTopology::Read(const std::string& sysfs_root) {
  const std::string base = sysfs_root + "/devices/system/cpu/cpu";
  std::vector<uint64_t> capacity;
  // Core numbers are dense from 0 on Linux (offline cores keep their
  // directory); the first missing one ends the list.
  for (int cpu = 0; cpu < kMaxCpus; ++cpu) {
    const std::string dir = base + std::to_string(cpu);
    const std::string cap = dir + "/cpu_capacity";
    const std::string freq = dir + "/cpufreq/cpuinfo_max_freq";
    const bool has_cap = Exists(cap);
    if (!has_cap && !Exists(dir + "/topology/core_id") && !Exists(freq)) break;
    capacity.push_back(has_cap ? ReadNumber(cap) : ReadNumber(freq));
  }
  return FromCapacities(std::move(capacity));
}

CpuTopology CpuTopology::FromCapacities(std::vector<uint64_t> capacity) {
  CpuTopology t;
  t.capacity_ = std::move(capacity);
  return t;
}

bool CpuTopology::heterogeneous() const {
  return std::adjacent_find(capacity_.begin(), capacity_.end(), std::not_equal_to<>()) !=
         capacity_.end();
}

std::vector<int> CpuTopology::Cores(CoreClass cores) const {
  std::vector<int> out;
  const bool all = cores == CoreClass::kAll || !heterogeneous();
  const uint64_t slowest =
      capacity_.empty() ? 0 : *std::min_element(capacity_.begin(), capacity_.end());
  for (int cpu = 0; cpu < n_cpus(); ++cpu) {
    const bool is_slowest = capacity(cpu) == slowest;
    if (all || (cores == CoreClass::kEfficiency) == is_slowest) out.push_back(cpu);
  }
  return out;
}

}  // namespace valet
