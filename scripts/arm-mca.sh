#!/usr/bin/env bash
# Static throughput of the NEON int8 kernels on Cortex-A76, Neoverse N2 and
# Neoverse V2: compiles the kernels' translation units for aarch64 exactly as
# the cross build does (clang-19, -O3, baseline armv8-a: each variant carries
# its own target attribute), takes each SDOT/SMMLA kernel's innermost loop
# from the assembly by its loop-header label (the sources carry no markers),
# and prints llvm-mca's cycles per iteration beside the bound the core's SDOT
# or SMMLA issue rate sets (scripts/arm_mca_report.py). No network; fails
# when a kernel or its loop is missing. About 30 s.
# Usage: scripts/arm-mca.sh
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

missing=()
for tool in clang++-19 llvm-mca-19 llvm-cxxfilt-19 python3; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
# Clang takes the target's libstdc++ headers from the cross GCC.
[ -d /usr/aarch64-linux-gnu/include/c++ ] || missing+=(libstdc++-12-dev-arm64-cross)
if [ ${#missing[@]} -gt 0 ]; then
  echo "arm-mca: ${missing[*]} missing (scripts/deps.sh installs them)" >&2
  exit 1
fi

asm_dir="$(mktemp -d)"
trap 'rm -rf "$asm_dir"' EXIT
for tu in packed_neon packed_i8mm tiles_dotprod_i8mm; do
  clang++-19 --target=aarch64-linux-gnu -std=c++20 -O3 -ffp-contract=off -DNDEBUG \
    -I"$VALET_ROOT/include" -I"$VALET_ROOT/src" -S "$VALET_ROOT/src/kernels/arm/$tu.cpp" -o "$asm_dir/$tu.s"
done
python3 "$VALET_ROOT/scripts/arm_mca_report.py" llvm-mca-19 llvm-cxxfilt-19 "$asm_dir"
