#!/usr/bin/env bash
# Builds everything (installing missing Debian packages) and runs valet's main
# job on the built-in default model, which it synthesizes on first use.
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$VALET_ROOT/scripts/deps.sh"

valet_install_deps
# The tests and micro-benchmarks are scripts/test.sh's (with their packages).
valet_build "$VALET_ROOT/build" -DCMAKE_BUILD_TYPE=Release -DVALET_BUILD_TESTS=OFF -DVALET_BUILD_BENCH=OFF

VALET="$VALET_ROOT/build/tools/valet"
MODEL="$VALET_ROOT/build/models/valet-bench-q8_0.gguf"
if [ ! -f "$MODEL" ]; then
  mkdir -p "$(dirname "$MODEL")"
  "$VALET" synth-model --preset bench --type q8_0 -o "$MODEL"
fi
"$VALET" info -m "$MODEL" | tail -n 3
# The headline: chat under indexing, arm by arm (about two minutes).
cd "$VALET_ROOT/build"
"$VALET" demo -m "$MODEL"
