// Internal (int8_peak.cpp): one throughput loop per int8 instruction, each
// compiled for its own target (x86/int8_peak.cpp, arm/int8_peak.cpp) and
// called only for a table the CPU has.
#pragma once

#include <cstdint>
#include <string_view>

namespace valet::int8_peak {

// Bytes of input a loop reads once before it starts: its operands come from
// memory the compiler cannot see, so it can fold nothing.
inline constexpr int kSeedBytes = 64 * 8;

struct PeakLoop {
  const char* instruction = nullptr;  // nullptr: this build has no loop for the table
  int64_t macs_per_iteration = 0;     // useful int8 multiply-adds of one iteration
  // Returns a checksum of the accumulators, so no work is dead.
  uint32_t (*run)(int64_t iterations, const uint8_t* seed) = nullptr;
};

// The loop of a table by its name (KernelTable::name); {} for other names or
// on the other architecture.
PeakLoop X86Loop(std::string_view table);
PeakLoop NeonLoop(std::string_view table);

}  // namespace valet::int8_peak
