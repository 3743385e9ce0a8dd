#!/usr/bin/env bash
# Regenerates docs/performance.md from one run of valet's benchmarks: the
# machine, the commit and the load average, then each benchmark's command
# and the table it printed, in this order:
#   1. engine speed against llama.cpp (bench files, and the 3b-shape Q4_0 and Q4_K_M files);
#   2. process start to the first token against llama-server (weights cache, none);
#   3. what onTrimMemory's advice frees and what the next step costs;
#   4. the cost of resuming a parked sequence, by park kind;
#   5. chat under indexing, every arm, and the turns after a return to the foreground;
#   6. the same load over HTTP against llama-server -np 1 and -np 2;
#   7. missed UI frames beside background inference (bench-jank);
#   8. CPU time against llama-server: idle, per decoded token, per chat token.
#
#   scripts/perf-report.sh [-o FILE] [-q]
#
# -o: where to write (default docs/performance.md). -q: a quick run (one
# repetition, few turns, no 3b-shape files) to try the script, not to publish.
# The full run takes about an hour on 2 cores. Run it on a quiet machine: a
# parallel build halves llama.cpp's speed (its threads spin), and only ratios
# from one alternating run mean anything. Needs a built valet
# (scripts/build.sh) and ../shared/peer/bin.
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VALET="${VALET:-$VALET_ROOT/build/tools/valet}"
export VALET

out="$VALET_ROOT/docs/performance.md"
quick=0
while getopts "o:q" opt; do
  case "$opt" in
    o) out="$OPTARG" ;;
    q) quick=1 ;;
    *) sed -n '2,19p' "$0" >&2; exit 2 ;;
  esac
done
[ -x "$VALET" ] || { echo "perf-report: build valet first (scripts/build.sh)" >&2; exit 2; }

models="$VALET_ROOT/build/models"
mkdir -p "$models"
bench_q8="$models/valet-bench-q8_0.gguf"
b3_q4_0="$models/valet-3b-shape-q4_0.gguf"
b3_q4_k="$models/valet-3b-shape-q4_k_m.gguf"
[ -f "$bench_q8" ] || "$VALET" synth-model --preset bench --type q8_0 -o "$bench_q8" >&2
if [ "$quick" = 0 ]; then
  [ -f "$b3_q4_0" ] || "$VALET" synth-model --preset 3b-shape --type q4_0 -o "$b3_q4_0" >&2
  [ -f "$b3_q4_k" ] || "$VALET" synth-model --preset 3b-shape --type q4_k -o "$b3_q4_k" >&2
fi
if [ "$quick" = 1 ]; then
  reps=1 reps_3b=1 turns=6 returns=2 serve_turns=6 cold_runs=1 resume_reps=1 trim_model="$bench_q8" jank_runs=1 jank_seconds=3
else
  reps=5 reps_3b=3 turns=30 returns=24 serve_turns=24 cold_runs=3 resume_reps=3 trim_model="$b3_q4_0" jank_runs=3 jank_seconds=20
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
body="$scratch/body.md"
: >"$body"

# Runs a benchmark and writes its section: a heading, the command, the output.
section() {
  local title="$1"
  shift
  echo "perf-report: $title" >&2
  local started=$SECONDS
  "$@" >"$scratch/out" 2>"$scratch/err" || { cat "$scratch/err" >&2; echo "perf-report: '$*' failed" >&2; exit 1; }
  {
    printf '## %s\n\n```sh\n%s\n```\n' "$title" "$(printf '%q ' "$@" | sed "s|$VALET_ROOT/||g; s|$scratch|\$TMPDIR|g; s| $||")"
    sed "s|$VALET_ROOT/||g; s|$scratch|\$TMPDIR|g" "$scratch/out"
    printf '\n(%d s)\n\n' $((SECONDS - started))
  } >>"$body"
}

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
section "Engine speed against llama.cpp: the bench files" \
  bash "$VALET_ROOT/scripts/bench-vs-llamacpp.sh" -r "$reps" -t 2
if [ "$quick" = 0 ]; then
  section "Engine speed against llama.cpp: the 3b-shape files" \
    bash "$VALET_ROOT/scripts/bench-vs-llamacpp.sh" -r "$reps_3b" -t 2 -p "64 512" -n 64 "$b3_q4_0" "$b3_q4_k"
  section "Process start to the first token against llama-server" \
    bash "$VALET_ROOT/scripts/bench-cold-start.sh" -r "$cold_runs" "$b3_q4_0"
fi
section "What onTrimMemory's advice on the weights frees" \
  "$VALET" bench-trim -m "$trim_model" -t 2 --weights-cache "$scratch/weights/"
section "Resuming a parked sequence, by park kind" \
  "$VALET" bench-resume -m "$bench_q8" -t 2 -r "$resume_reps"
section "Chat under indexing: every arm" \
  "$VALET" bench-contention -m "$bench_q8" -t 2 --turns "$turns"
section "The first turn back in the foreground" \
  "$VALET" bench-contention -m "$bench_q8" -t 2 --turns $((turns * 2)) --returns "$returns" --arms idle,valet
section "Chat under indexing over HTTP, against llama-server" \
  bash "$VALET_ROOT/scripts/bench-serve-vs-llamacpp.sh" -n "$serve_turns" "$bench_q8"
section "Background inference and the UI thread's frames" \
  "$VALET" bench-jank -m "$bench_q8" -t 2 --runs "$jank_runs" --seconds "$jank_seconds"
if [ "$quick" = 1 ]; then
  section "CPU time against llama-server" python3 "$VALET_ROOT/scripts/bench-cpu-time.py" --model "$bench_q8" \
    --runs 1 --idle-s 3 --tokens 32 --turns 2 --think-s 0.5
else
  section "CPU time against llama-server" python3 "$VALET_ROOT/scripts/bench-cpu-time.py" --model "$b3_q4_0"
fi
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
simd="$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_vnni|avx512_bf16|avx_vnni|asimddp|i8mm)$' | tr '\n' ' ')"
commit="$(git -C "$VALET_ROOT" rev-parse --short HEAD)$(git -C "$VALET_ROOT" diff --quiet HEAD -- src include tools || echo '+changes')"
{
  echo "# Performance"
  echo
  echo "Generated by \`scripts/perf-report.sh$([ "$quick" = 1 ] && echo ' -q')\` from one run; do not edit by hand."
  echo
  echo "- CPU: $cpu, $(nproc) cores (${simd% }); 2 threads throughout"
  echo "- valet $commit, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- load average (1, 5, 15 min): $load_before before, $load_after after"
  echo
  echo "Ratios against llama.cpp come from runs that alternate the two engines; absolute speeds on a"
  echo "shared machine move by up to 30% between runs minutes apart. What the figures mean and how the"
  echo "benchmarks work: docs/engine.md, docs/contention.md, docs/server.md."
  echo
  cat "$body"
} >"$out"
echo "perf-report: wrote $out" >&2
