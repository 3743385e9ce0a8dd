#!/usr/bin/env bash
# The AArch64 part of the test suite: cross-builds the kernel and engine
# tests with clang-19 and lld-19 against Debian's g++-aarch64-linux-gnu
# libraries (cmake/aarch64-linux-gnu-clang.cmake) and runs them under
# qemu-aarch64 as three CPUs (in parallel), so every NEON kernel table
# runs against the scalar reference and the engine runs on each:
#   cortex-a53   plain NEON (no dotprod, no i8mm)
#   neoverse-n1  NEON + dotprod
#   max          NEON + dotprod + i8mm
# Engine tests: the micro-model engine test (chunking, threads, every weight
# type's closeness to F32), the context test, and the goldens of stories260K
# and every synth-tiny model against llama.cpp, so each quant type's row-group
# kernels run a real model (about 40 s per CPU emulated). The matmul and
# batch-invariance tests are left out (40 s each per CPU); the vec_dot, tile
# and packed tests cover every kernel.
# The guest's libraries come from the cross toolchain's sysroot only: with a
# multiarch libc6:arm64 installed, qemu's -L fallback would pair the sysroot's
# ld.so with /lib/aarch64-linux-gnu's libc, a mismatch that spins forever in
# the first pthread_create (it once looked like "engine tests are too slow
# under emulation"). Without clang-19, lld-19, the cross toolchain or qemu it
# skips with a message, except in CI (CI=true), where a missing tool is an error.
# Usage: scripts/test-aarch64.sh [BUILD_DIR]
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$VALET_ROOT/build-arm}"

missing=()
command -v clang++-19 >/dev/null || missing+=(clang-19)
command -v ld.lld-19 >/dev/null || missing+=(lld-19)
# Clang's target libstdc++, glibc and crt files: the cross GCC's.
[ -d /usr/aarch64-linux-gnu/include/c++ ] || missing+=(libstdc++-12-dev-arm64-cross)
command -v qemu-aarch64 >/dev/null || missing+=(qemu-aarch64)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "aarch64 tests: ${missing[*]} missing in CI (scripts/deps.sh installs them)" >&2
    exit 1
  fi
  echo "== aarch64 tests SKIPPED: ${missing[*]} not installed (scripts/deps.sh installs them)"
  exit 0
fi

kernel_tests=(kernels_fp16_test kernels_quant_test kernels_vec_dot_test kernels_tile_test
              kernels_neon_ext_test kernels_attention_test kernels_activation_test kernels_packed_test)
engine_tests=(micro_engine_test llama_context_test golden_test)
golden_filter='*/stories260K*:*/synth_tiny*:GoldenFiles.*'
sysroot=/usr/aarch64-linux-gnu

cmake -S "$VALET_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$VALET_ROOT/cmake/aarch64-linux-gnu-clang.cmake" \
  -DVALET_ENGINE_ONLY=ON -DVALET_JAVA_TESTS=OFF -DVALET_BUILD_BENCH=OFF -DVALET_USE_BLAS=OFF >/dev/null
cmake --build "$build" --target "${kernel_tests[@]}" "${engine_tests[@]}"

run() {  # run CPU TEST...
  local cpu="$1"; shift
  for t in "$@"; do
    local bin
    bin="$(find "$build/tests" -type f -name "$t" | head -n1)"
    local filter='*'
    [ "$t" = golden_test ] && filter="$golden_filter"
    echo "-- $t on $cpu"
    qemu-aarch64 -L "$sysroot" -E LD_LIBRARY_PATH="$sysroot/lib" -cpu "$cpu" "$bin" --gtest_brief=1 \
      --gtest_filter="$filter"
  done
}
cpu_tests() {  # cpu_tests CPU
  echo "== aarch64 kernel and engine tests, qemu -cpu $1"
  run "$1" "${kernel_tests[@]}" "${engine_tests[@]}"
}
# The three CPUs at once (each guest is one thread); a CPU's run stops at its
# first failing test, as a serial run would.
source "$VALET_ROOT/scripts/parallel.sh"
for cpu in cortex-a53 neoverse-n1 max; do
  bg_start "aarch64 tests on $cpu" "$build/qemu-$cpu.log" cpu_tests "$cpu"
done
bg_wait_all
