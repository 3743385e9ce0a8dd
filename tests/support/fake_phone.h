// What the thread-placement tests read back from the kernel (a thread's nice
// value and cores) and the phone they describe with this machine's cores: two
// of the cores this process may use, the first a little core, every other one
// big (a FakeSysfs tree of their capacities). Linux only.
#pragma once

#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <vector>

#include "support/fake_sysfs.h"

namespace valet {

inline int NiceOf(int tid) {
  errno = 0;
  return getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
}

// The cores thread `tid` may run on (0: the calling thread), ascending.
inline std::vector<int> CoresOf(int tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(tid, sizeof(set), &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  }
  return out;
}

struct FakePhone {
  std::vector<int> allowed;
  int little = -1;  // -1: one core only, no phone to describe
  std::vector<int> big;
  std::unique_ptr<FakeSysfs> sysfs;
};

inline FakePhone MakeFakePhone() {
  FakePhone p;
  p.allowed = CoresOf(0);
  if (p.allowed.size() < 2) return p;
  p.little = p.allowed[0];
  p.big.assign(p.allowed.begin() + 1, p.allowed.end());
  std::vector<uint64_t> capacity(static_cast<size_t>(p.allowed.back()) + 1, 1024);
  capacity[static_cast<size_t>(p.little)] = 400;
  p.sysfs = std::make_unique<FakeSysfs>(capacity);
  return p;
}

}  // namespace valet
#endif  // __linux__
