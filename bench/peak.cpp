// The int8 multiply-accumulate peak of every kernel table this CPU supports,
// per core and for N unpinned threads: the ceiling prefill can approach
// (issue 21; kernels/int8_peak.h has the method). One multiply-add = 2 ops.
//   build/bench/valet_peak [threads] [reps] [--json]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/json.h"
#include "kernels/int8_peak.h"
#include "kernels/kernel_table.h"

namespace {

// Every table the running CPU has, from CPUID / HWCAP; the scalar one has no
// int8 instruction to measure.
std::vector<const valet::KernelTable*> SupportedTables() {
  std::vector<const valet::KernelTable*> tables;
  for (const valet::KernelTable* t :
       {valet::Avx2Kernels(), valet::AvxVnniKernels(), valet::Avx512VnniKernels(), valet::Avx512Bf16Kernels(),
        valet::NeonKernels(), valet::NeonDotprodKernels(), valet::NeonI8mmKernels()}) {
    if (t != nullptr) tables.push_back(t);
  }
  return tables;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  std::vector<int> numbers;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else {
      numbers.push_back(std::atoi(argv[i]));
    }
  }
  const int threads = numbers.size() > 0 ? numbers[0] : 2;
  const int reps = numbers.size() > 1 ? numbers[1] : 5;
  if (threads < 1 || threads > 1024 || reps < 1 || numbers.size() > 2) {
    std::fprintf(stderr, "usage: valet_peak [threads >= 1] [reps >= 1] [--json]\n");
    return 2;
  }
  valet::Json tables = valet::Json::object();
  int measured = 0;
  for (const valet::KernelTable* t : SupportedTables()) {
    const std::optional<valet::Int8Peak> p = valet::MeasureInt8Peak(*t, threads, reps);
    if (!p) continue;
    ++measured;
    if (json) {
      tables[t->name] = {{"instruction", p->instruction},
                         {"gops_per_core", p->gops_per_core},
                         {"gops_threads", p->gops_threads}};
    } else {
      std::printf("%-12s %-24s per core %8.1f GOP/s   %d threads %8.1f GOP/s\n", t->name, p->instruction,
                  p->gops_per_core, threads, p->gops_threads);
    }
  }
  if (json) {
    const valet::Json out{{"threads", threads}, {"reps", reps}, {"active", valet::ActiveKernelsName()},
                          {"tables", tables}};
    std::printf("%s\n", out.dump().c_str());
  } else if (measured == 0) {
    std::printf("no int8 SIMD kernel table on this CPU (scalar only)\n");
  }
  return 0;
}
