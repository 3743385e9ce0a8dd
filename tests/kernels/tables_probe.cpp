// Prints the kernel tables this CPU runs, from the same run-time choice the
// tests use, so the scripts that run the tests on emulated CPUs
// (scripts/test-x86-avx512.sh under Bochs, scripts/test-aarch64.sh under
// qemu) can tell from the guest's output which tables the kernel tests
// compared with the scalar reference and which one the engine tests ran on.
#include <cstdio>

#include "kernels/kernel_table.h"

int main() {
  const valet::KernelTable* tables[valet::kMaxKernelTables];
  const int n = valet::AvailableKernelTables(tables);
  std::printf("VALET-TABLES:");
  for (int i = 0; i < n; ++i) std::printf(" %s", tables[i]->name);
  std::printf("\nVALET-ACTIVE: %s\n", valet::ActiveKernelsName());
  return 0;
}
