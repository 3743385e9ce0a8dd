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
# A pass needs more than every test passing: each CPU's log must show the
# tables that CPU is meant to run (kernel_tables_probe: the tables the kernel
# tests compared with the reference, and the one the engine tests ran on) and
# the dotprod and i8mm tests run or skipped as its extensions say, so a table
# gated off by mistake, whose tests then skip, cannot pass as success.
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
cmake --build "$build" --target "${kernel_tests[@]}" "${engine_tests[@]}" kernel_tables_probe
probe="$build/tests/kernels/kernel_tables_probe"

# guest CPU BINARY ARG...: runs an aarch64 binary as that CPU. VALET_KERNELS
# is unset in the guest: the tables must be the ones the CPU's HWCAPs choose.
guest() {
  local cpu="$1"; shift
  qemu-aarch64 -L "$sysroot" -E LD_LIBRARY_PATH="$sysroot/lib" -U VALET_KERNELS -cpu "$cpu" "$@"
}
run() {  # run CPU TEST...
  local cpu="$1"; shift
  for t in "$@"; do
    local bin
    bin="$(find "$build/tests" -type f -name "$t" | head -n1)"
    local filter='*' brief=1
    [ "$t" = golden_test ] && filter="$golden_filter"
    # The extension tests in full: their OK or SKIPPED lines are checked below.
    [ "$t" = kernels_neon_ext_test ] && brief=0
    echo "-- $t on $cpu"
    guest "$cpu" "$bin" --gtest_color=no --gtest_brief="$brief" --gtest_filter="$filter"
  done
}
cpu_tests() {  # cpu_tests CPU
  echo "== aarch64 kernel and engine tests, qemu -cpu $1"
  guest "$1" "$probe"
  run "$1" "${kernel_tests[@]}" "${engine_tests[@]}"
  echo "VALET-END"
}

# check CPU: says whether CPU's log shows the tables it must run: its
# extension tables among those the kernel tests compared (AvailableKernelTables
# lists the best extension only), the best as the active table the engine
# tests ran on, and each extension's own test run (OK) or skipped as the CPU
# has it or not.
check() {
  local cpu="$1" log="$build/qemu-$1.log" ok=0 want_tables want_dotprod want_i8mm
  case "$cpu" in
    cortex-a53)  want_tables="scalar neon" want_dotprod=SKIPPED want_i8mm=SKIPPED ;;
    neoverse-n1) want_tables="scalar neon neon_dotprod" want_dotprod=OK want_i8mm=SKIPPED ;;
    max)         want_tables="scalar neon neon_i8mm" want_dotprod=OK want_i8mm=OK ;;
    *) echo "FAIL $cpu: no expected tables for this CPU"; return 1 ;;
  esac
  grep -q '^VALET-END$' "$log" || { echo "FAIL $cpu: its tests did not all run (see $log)"; ok=1; }
  local tables active
  tables="$(sed -n 's/^VALET-TABLES: //p' "$log")"
  active="$(sed -n 's/^VALET-ACTIVE: //p' "$log")"
  [ "$tables" = "$want_tables" ] || { echo "FAIL $cpu: expected tables '$want_tables', got '$tables'"; ok=1; }
  [ "$active" = "${want_tables##* }" ] || { echo "FAIL $cpu: expected ${want_tables##* } active, got '$active'"; ok=1; }
  local ext want name result results=""
  for ext in Dotprod:"$want_dotprod" I8mm:"$want_i8mm"; do
    want="${ext#*:}"
    name="NeonExtensions.${ext%%:*}TableMatchesScalar"
    # Its result line, "[       OK ] NAME (N ms)" or "[  SKIPPED ] NAME (N ms)".
    result="$(grep -E "^\[ +[A-Z]+ +\] $name \(" "$log" | sed -E 's/^\[ +([A-Z]+) +\].*/\1/' || true)"
    [ "$result" = "$want" ] || { echo "FAIL $cpu: $name expected $want, got '$result'"; ok=1; }
    results+="; $name $result"
  done
  [ $ok -eq 0 ] && echo "PASS $cpu: tables $tables, $active active$results"
  return $ok
}

# The three CPUs at once (each guest is one thread); a CPU's run stops at its
# first failing test, as a serial run would.
source "$VALET_ROOT/scripts/parallel.sh"
cpus=(cortex-a53 neoverse-n1 max)
for cpu in "${cpus[@]}"; do
  bg_start "aarch64 tests on $cpu" "$build/qemu-$cpu.log" cpu_tests "$cpu"
done
status=0
bg_wait_all || status=1
for cpu in "${cpus[@]}"; do check "$cpu" || status=1; done
echo "== aarch64 tests: $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
