#!/usr/bin/env bash
# Builds the GGUF libFuzzer target in build-fuzz/ and runs it for N seconds
# (default 60). Exits non-zero when the fuzzer finds a crash; the input is
# left in build-fuzz/fuzz-artifacts/.
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"
mkdir -p "$build"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVALET_BUILD_FUZZ=ON \
  -DVALET_BUILD_TESTS=OFF -DVALET_BUILD_BENCH=OFF >"$build/cmake.log" 2>&1 ||
  { cat "$build/cmake.log"; exit 1; }
ninja -C "$build" gguf_fuzz make_gguf_seeds

seeds="$root/fuzz/corpus"       # regenerated each run, ignored by git
work="$build/fuzz-corpus"       # inputs the fuzzer found interesting
artifacts="$build/fuzz-artifacts"
mkdir -p "$seeds" "$work" "$artifacts"
"$build/fuzz/make_gguf_seeds" "$seeds"

"$build/fuzz/gguf_fuzz" \
  -max_len=65536 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -dict="$root/fuzz/gguf.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
  "$work" "$seeds"
