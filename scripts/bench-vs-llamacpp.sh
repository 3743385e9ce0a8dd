#!/usr/bin/env bash
# Side by side: valet bench-engine and llama.cpp's llama-bench on the same
# GGUF files and thread counts, alternating run by run (valet, llama.cpp,
# valet, ...) so both see the same machine state; prints one markdown table of
# medians with valet/llama.cpp ratios.
#
#   scripts/bench-vs-llamacpp.sh [-t "2 4"] [-r 5] [-p 512] [-n 128] [MODEL.gguf ...]
#
# Without models it uses the bench preset quantized by llama.cpp's own
# llama-quantize to Q4_0, Q8_0 and Q4_K_M (made once under build/models/).
# Needs a built valet (scripts/build.sh) and ../shared/peer/bin.
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VALET="${VALET:-$VALET_ROOT/build/tools/valet}"
PEER="$VALET_ROOT/../shared/peer/bin"

threads="2 $(nproc)"
reps=5
n_prompt=512
n_gen=128
while getopts "t:r:p:n:" opt; do
  case "$opt" in
    t) threads="$OPTARG" ;;
    r) reps="$OPTARG" ;;
    p) n_prompt="$OPTARG" ;;
    n) n_gen="$OPTARG" ;;
    *) sed -n '2,11p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
threads="$(echo "$threads" | tr ' ' '\n' | awk 'NF && !seen[$0]++' | tr '\n' ' ')"

[ -x "$VALET" ] || { echo "bench-vs-llamacpp: build valet first (scripts/build.sh)" >&2; exit 2; }
[ -x "$PEER/llama-bench" ] || { echo "bench-vs-llamacpp: $PEER/llama-bench not found" >&2; exit 2; }

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  dir="$VALET_ROOT/build/models"
  mkdir -p "$dir"
  f32="$dir/valet-bench-f32.gguf"
  [ -f "$f32" ] || "$VALET" synth-model --preset bench --type f32 -o "$f32" >&2
  for t in Q4_0 Q8_0 Q4_K_M; do
    out="$dir/valet-bench-llamacpp-$(echo "$t" | tr 'A-Z' 'a-z').gguf"
    [ -f "$out" ] || "$PEER/llama-quantize" "$f32" "$out" "$t" >/dev/null 2>&1
    models+=("$out")
  done
fi

results="$(mktemp)"
trap 'rm -f "$results"' EXIT
cpu="$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
echo "valet vs llama.cpp: $cpu, $(nproc) cores, $(date -u +%Y-%m-%d), median of $reps alternating runs" >&2

for ((rep = 1; rep <= reps; rep++)); do
  for m in "${models[@]}"; do
    for t in $threads; do
      echo "  run $rep/$reps: $(basename "$m") -t $t" >&2
      "$VALET" bench-engine -m "$m" -t "$t" -p "$n_prompt" -n "$n_gen" --reps 1 --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); k=sorted(d); print("valet", sys.argv[1], sys.argv[2], d[[x for x in k if x.startswith("pp")][0]], d[[x for x in k if x.startswith("tg")][0]])' "$m" "$t" >>"$results"
      "$PEER/llama-bench" -m "$m" -t "$t" -p "$n_prompt" -n "$n_gen" -r 1 -o json 2>/dev/null |
        python3 -c 'import json,sys
rows=json.load(sys.stdin)
pp=[r["avg_ts"] for r in rows if r["n_prompt"]>0 and r["n_gen"]==0][0]
tg=[r["avg_ts"] for r in rows if r["n_gen"]>0 and r["n_prompt"]==0][0]
print("llama", sys.argv[1], sys.argv[2], pp, tg)' "$m" "$t" >>"$results"
    done
  done
done

python3 - "$results" "$n_prompt" "$n_gen" <<'EOF'
import os, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tool, model, threads, pp, tg = line.split()
    rows.setdefault((model, int(threads)), {}).setdefault(tool, []).append((float(pp), float(tg)))
pp_name, tg_name = "pp" + sys.argv[2], "tg" + sys.argv[3]
print(f"| model | threads | valet {pp_name} | llama.cpp {pp_name} | ratio | valet {tg_name} | llama.cpp {tg_name} | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for (model, threads), tools in sorted(rows.items()):
    med = {k: (statistics.median(p for p, _ in v), statistics.median(t for _, t in v)) for k, v in tools.items()}
    (vp, vt), (lp, lt) = med["valet"], med["llama"]
    print(f"| {os.path.basename(model)} | {threads} | {vp:.1f} | {lp:.1f} | {vp / lp:.2f} | {vt:.1f} | {lt:.1f} | {vt / lt:.2f} |")
EOF
