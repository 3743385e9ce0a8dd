#!/usr/bin/env bash
# Runs the whole test suite: the unit, golden and integration tests (Release,
# GCC), the kernel and engine tests on aarch64 under qemu (clang), the NEON
# int8 kernels' inner loops through llvm-mca (scripts/arm-mca.sh), the library
# an Android app ships built for aarch64 and x86_64 as the NDK would, where no
# Python or Unicode data can be seen, and checked (16 KB pages, JNI version,
# dlopen under qemu), the kernel and engine tests on emulated
# AVX-512 CPUs under Bochs, the suite under ASan+UBSan and under TSan (clang),
# a one-minute soak of valet serve, kill soaks of its durable tasks and of
# the weights cache's creation, and
# the GGUF reader, chat-template and HTTP server fuzzers for 40 seconds each
# (and the GBNF grammar fuzzer for 10 beside them).
# VALET_TEST_QUICK=1 skips Bochs, the sanitizer builds, the soaks and the
# fuzzers.
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$VALET_ROOT/scripts/deps.sh"

valet_install_test_deps
# The pinned npm packages the node tests use: the openai client that
# tests/server/node drives the server with, ajv that tests/constrain/node
# checks constrained outputs with, the reference Jinja renderer that
# tests/chat/node checks renders with tools against.
if command -v npm >/dev/null; then
  for dir in tests/server/node tests/constrain/node tests/chat/node; do
    (cd "$VALET_ROOT/$dir" && npm ci --no-audit --no-fund --silent)
  done
fi
jobs=$(nproc)
# Each stage's wall time, so CI's budget can be read off its log.
stage() { echo "== [${SECONDS}s] $*"; }

stage "release build + tests"
valet_build "$VALET_ROOT/build" -DCMAKE_BUILD_TYPE=Release -DVALET_BUILD_TESTS=ON -DVALET_BUILD_BENCH=ON
ctest --test-dir "$VALET_ROOT/build" --output-on-failure -j "$jobs"

stage "aarch64 cross build + tests under qemu"
bash "$VALET_ROOT/scripts/test-aarch64.sh" "$VALET_ROOT/build-arm"

# Static cycles of the NEON int8 kernels' inner loops on three ARM cores
# (about 30 s): a kernel renamed or a loop gone fails here.
stage "arm-mca: NEON int8 kernels' inner loops on Cortex-A76, Neoverse N2 and V2"
bash "$VALET_ROOT/scripts/arm-mca.sh"

stage "app library: aarch64 and x86_64 with the NDK's toolchain, 16 KB pages, dlopen under qemu"
bash "$VALET_ROOT/scripts/test-app-library.sh" "$VALET_ROOT/build-app"

if [ "${VALET_TEST_QUICK:-0}" != "1" ]; then
  # The AVX-512 tables under Bochs (docs/testing-avx512.md): about 7 minutes,
  # so a hung guest is given 30, not the script's default 90.
  stage "x86 AVX-512 kernel and engine tests under Bochs"
  VALET_AVX512EMU_TIMEOUT="${VALET_AVX512EMU_TIMEOUT:-1800}" bash "$VALET_ROOT/scripts/test-x86-avx512.sh"

  # Built with clang-19 (its sanitizer runtimes: libclang-rt-19-dev), so the
  # whole tree compiles under clang as well as GCC. -O1 with line tables only:
  # the sanitizers' usual level, and it compiles 2-2.5x faster than
  # RelWithDebInfo's -O2 -g (golden_test.cpp under GCC's ASan: 13 s against
  # 34 s), which is most of these stages' time.
  # The JVM does not run under the sanitizers (bindings/java/CMakeLists.txt):
  # the Release stage runs the Java tests, these the C API's.
  sanitizer_flags=(-DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19
                   -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                   "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DVALET_JAVA_TESTS=OFF)
  stage "ASan+UBSan build + tests"
  valet_build "$VALET_ROOT/build-asan" "${sanitizer_flags[@]}" -DVALET_SANITIZE=address -DVALET_BUILD_BENCH=OFF
  ctest --test-dir "$VALET_ROOT/build-asan" --output-on-failure -j "$jobs"

  # OpenBLAS's own threads are not instrumented, so TSan runs the native kernels.
  # Only the tests whose code runs on more than one thread (the thread pool,
  # the engine's parallel forward pass, the scheduler, the C API, the server,
  # the contention benchmark): the parsers', kernels' and tokenizers' tests are
  # single-threaded and already run under ASan, and skipping them saves a
  # quarter of this stage. The micro-benchmarks are built here (not run), so
  # clang compiles them too.
  stage "TSan build + tests"
  valet_build "$VALET_ROOT/build-tsan" "${sanitizer_flags[@]}" -DVALET_SANITIZE=thread -DVALET_USE_BLAS=OFF \
    -DVALET_BUILD_BENCH=ON "-DVALET_TEST_DIRS=kv;engine;sched;capi;server;bench"
  # Races inside Debian's prebuilt (uninstrumented) cpp-httplib are suppressed; see the file.
  TSAN_OPTIONS="suppressions=$VALET_ROOT/tests/tsan.supp ${TSAN_OPTIONS:-}" \
    ctest --test-dir "$VALET_ROOT/build-tsan" --output-on-failure -j "$jobs"

  # valet serve under a minute of mixed tiers, clients that leave, slow
  # clients, lifecycle events and malformed requests (scripts/soak-serve.py).
  stage "soak: valet serve, 60 s of mixed and hostile load"
  soak_model="$VALET_ROOT/build/models/valet-tiny-f32.gguf"
  mkdir -p "$VALET_ROOT/build/models"
  [ -f "$soak_model" ] || "$VALET_ROOT/build/tools/valet" synth-model --preset tiny -o "$soak_model" >/dev/null
  python3 "$VALET_ROOT/scripts/soak-serve.py" --valet "$VALET_ROOT/build/tools/valet" --model "$soak_model" --seconds 60

  # Durable tasks over HTTP: valet serve SIGKILLed 20 times (from outside, mid
  # journal append, between a KV checkpoint's write and its rename), then a
  # disk that fills and frees four times under running tasks (a tmpfs in the
  # script's own mount namespace); every task's result, and every 200 served
  # on the way, equal to an uninterrupted server's (about 5 s).
  stage "soak: durable tasks through 20 kills of valet serve and a full disk"
  python3 "$VALET_ROOT/scripts/soak-durable-serve.py" --valet "$VALET_ROOT/build/tools/valet" --model "$soak_model" \
    --kills 20

  # The weights cache's creation SIGKILLed 40 times, half of them while it is
  # written, over empty, stale and damaged cache directories: a cache is
  # only ever accepted whole (about 15 s).
  stage "soak: weights cache creation through 40 kills"
  python3 "$VALET_ROOT/scripts/soak-weights-cache.py" --valet "$VALET_ROOT/build/tools/valet" --kills 40

  stage "fuzzing: GGUF reader, chat templates, HTTP server (40 s each), GBNF grammars (10 s)"
  bash "$VALET_ROOT/scripts/fuzz.sh" 40
fi
stage "done"
