// Prints the kernel tables this CPU runs, from the same run-time choice the
// tests use, so scripts/test-x86-avx512.sh can tell from the Bochs guest's
// console which tables the kernel tests compared with the scalar reference.
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
