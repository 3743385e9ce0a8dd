#!/usr/bin/env bash
# The headline on the models the scene is about: chat under indexing
# (`valet bench-contention`, arms idle, FIFO and valet in interleaved blocks)
# on the 3b-shape Q4_0 model and on a Gemma 3 3b-shape Q4_0 model (sliding-
# window KV), each synthesized into build/models/ on first use (1.6 and 1.7
# GB, seconds each). Prints each model's tables: TTFT and TPOT
# with confidence intervals, the slowest turn, the return turns, background
# throughput and recomputation by cause.
#
#   scripts/headline-3b.sh [-n TURNS] [-r RETURNS] [-s SEED] [-t THREADS] [-o DIR] [MODEL.gguf...]
#
# TURNS chat turns per arm (default 30), RETURNS of them after a return to the
# foreground (default 6), SEED the workload's (default 1). -o DIR keeps each
# model's JSON report there. MODEL... replaces the two default models. The
# demo keeps the small bench model; this takes about 30 minutes on 2 cores.
# Run it on a quiet machine: only ratios from one interleaved run mean anything.
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VALET="${VALET:-$VALET_ROOT/build/tools/valet}"

turns=30
returns=6
seed=1
threads=2
out=""
while getopts "n:r:s:t:o:" opt; do
  case "$opt" in
    n) turns="$OPTARG" ;;
    r) returns="$OPTARG" ;;
    s) seed="$OPTARG" ;;
    t) threads="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ -x "$VALET" ] || { echo "headline-3b: build valet first (scripts/build.sh)" >&2; exit 2; }

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  dir="$VALET_ROOT/build/models"
  mkdir -p "$dir"
  models=("$dir/valet-3b-shape-q4_0.gguf" "$dir/valet-3b-shape-gemma3-q4_0.gguf")
  [ -f "${models[0]}" ] || "$VALET" synth-model --preset 3b-shape --type q4_0 -o "${models[0]}" >&2
  [ -f "${models[1]}" ] || "$VALET" synth-model --preset 3b-shape --arch gemma3 --type q4_0 -o "${models[1]}" >&2
fi
[ -z "$out" ] || mkdir -p "$out"

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores;" \
  "valet $(git -C "$VALET_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'); load $(cut -d' ' -f1-3 /proc/loadavg)"
for model in "${models[@]}"; do
  [ -f "$model" ] || { echo "headline-3b: no model $model" >&2; exit 2; }
  json=()
  [ -z "$out" ] || json=(--json "$out/$(basename "$model" .gguf).json")
  echo
  echo "## $(basename "$model")"
  echo
  echo "valet bench-contention -m $(basename "$model") -t $threads --turns $turns --returns $returns --seed $seed --arms idle,fifo,valet"
  "$VALET" bench-contention -m "$model" -t "$threads" --turns "$turns" --returns "$returns" --seed "$seed" \
    --arms idle,fifo,valet "${json[@]}"
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
