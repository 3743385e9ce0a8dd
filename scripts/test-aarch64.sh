#!/usr/bin/env bash
# The AArch64 part of the test suite: cross-builds the kernel tests with
# Debian's g++-aarch64-linux-gnu (cmake/aarch64-linux-gnu.cmake) and
# runs them under qemu-aarch64 as three CPUs, so every NEON kernel table runs
# against the scalar reference:
#   cortex-a53   plain NEON (no dotprod, no i8mm)
#   neoverse-n1  NEON + dotprod
#   max          NEON + dotprod + i8mm
# Only the kernel tests run: emulated, a model or engine test takes over ten
# minutes (llama_context_test did not finish in ten on this 2-core machine),
# and the matmul test many minutes; the vec_dot and tile tests cover every
# NEON kernel against the scalar reference. Without the cross
# compiler or qemu it skips with a message, except in CI (CI=true), where a
# missing tool is an error. Usage: scripts/test-aarch64.sh [BUILD_DIR]
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$VALET_ROOT/build-arm}"

missing=()
command -v aarch64-linux-gnu-g++ >/dev/null || missing+=(aarch64-linux-gnu-g++)
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
              kernels_neon_ext_test kernels_attention_test)

cmake -S "$VALET_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$VALET_ROOT/cmake/aarch64-linux-gnu.cmake" \
  -DVALET_ENGINE_ONLY=ON -DVALET_BUILD_BENCH=OFF -DVALET_USE_BLAS=OFF >/dev/null
cmake --build "$build" --target "${kernel_tests[@]}"

run() {  # run CPU TEST...
  local cpu="$1"; shift
  for t in "$@"; do
    local bin
    bin="$(find "$build/tests" -type f -name "$t" | head -n1)"
    echo "-- $t on $cpu"
    qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu "$cpu" "$bin" --gtest_brief=1
  done
}
for cpu in cortex-a53 neoverse-n1 max; do
  echo "== aarch64 kernel tests, qemu -cpu $cpu"
  run "$cpu" "${kernel_tests[@]}"
done
