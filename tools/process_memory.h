// Resident memory of this process, for reports.
#pragma once

#include <cstddef>
#include <cstdio>
#include <unistd.h>

namespace valet::cli {

// Resident set size in bytes (from /proc/self/statm), or 0 where unavailable.
inline size_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace valet::cli
