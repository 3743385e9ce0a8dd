#!/usr/bin/env bash
# Side by side: valet bench-engine and llama.cpp's llama-bench on the same
# GGUF files and thread counts, alternating run by run (valet, llama.cpp,
# valet, ...) so both see the same machine state; prints one markdown table of
# medians with valet/llama.cpp ratios.
#
#   scripts/bench-vs-llamacpp.sh [-t "2 4"] [-r 5] [-p "64 512"] [-n 128] [MODEL.gguf ...]
#
# -p takes prompt sizes: pp64 is a chat turn after a cached system prompt,
# pp512 a long prompt. Each prefill column has valet's share of this CPU's
# int8 peak (valet_peak's figure for the kernel table valet runs).
# Without models it uses the bench preset quantized by llama.cpp's own
# llama-quantize to Q4_0, Q8_0 and Q4_K_M (made once under build/models/).
# Needs a built valet (scripts/build.sh) and ../shared/peer/bin.
# PEER=DIR runs the llama-bench in DIR instead (ggml loads the best CPU
# variant it finds beside it): with a copy of peer/bin that holds only the x64
# and haswell variants, and VALET_KERNELS=avx2, both sides run their AVX2 code.
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VALET="${VALET:-$VALET_ROOT/build/tools/valet}"
PEER="${PEER:-$VALET_ROOT/../shared/peer/bin}"

threads="2 $(nproc)"
reps=5
prompts="64 512"
n_gen=128
while getopts "t:r:p:n:" opt; do
  case "$opt" in
    t) threads="$OPTARG" ;;
    r) reps="$OPTARG" ;;
    p) prompts="$OPTARG" ;;
    n) n_gen="$OPTARG" ;;
    *) sed -n '2,15p' "$0" >&2; exit 2 ;;
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

for i in "${!models[@]}"; do models[$i]="$(realpath "${models[$i]}")"; done
results="$(mktemp)"
peer_log="$(mktemp)"
trap 'rm -f "$results" "$peer_log"' EXIT
cpu="$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
echo "valet vs llama.cpp: $cpu, $(nproc) cores, $(date -u +%Y-%m-%d), median of $reps alternating runs" >&2

# One valet run per prompt size (decode only with the last; the others pass
# -n 1); llama-bench does every size and decode in one call.
last="${prompts##* }"
for ((rep = 1; rep <= reps; rep++)); do
  for m in "${models[@]}"; do
    for t in $threads; do
      echo "  run $rep/$reps: $(basename "$m") -t $t" >&2
      for p in $prompts; do
        n=1
        [ "$p" = "$last" ] && n="$n_gen"
        "$VALET" bench-engine -m "$m" -t "$t" -p "$p" -n "$n" --reps 1 --json |
          python3 -c 'import json,sys
d=json.load(sys.stdin); p,n=sys.argv[3],sys.argv[4]
share=(d.get("int8_peak") or {}).get("prefill_share", -1)
print("valet", sys.argv[1], sys.argv[2], "kernels", d["kernels"], -1)
print("valet", sys.argv[1], sys.argv[2], "pp"+p, d["pp"+p+"_tok_s"], share)
if n!="1": print("valet", sys.argv[1], sys.argv[2], "tg"+n, d["tg"+n+"_tok_s"], -1)' "$m" "$t" "$p" "$n" >>"$results"
      done
      # From its own directory: ggml also looks for CPU variants in the working one.
      (cd "$PEER" && ./llama-bench -m "$m" -t "$t" -p "$(echo $prompts | tr ' ' ',')" -n "$n_gen" -r 1 -o json 2>"$peer_log") |
        python3 -c 'import json,sys
for r in json.load(sys.stdin):
    name = "pp%d" % r["n_prompt"] if r["n_gen"] == 0 else "tg%d" % r["n_gen"]
    print("llama", sys.argv[1], sys.argv[2], name, r["avg_ts"], -1)' "$m" "$t" >>"$results"
    done
  done
done

echo "llama.cpp: $(sed -n 's/^load_backend: //p' "$peer_log" | tr '\n' ' ')" >&2
python3 - "$results" $prompts "$n_gen" <<'EOF'
import os, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tool, model, threads, test, rate, share = line.split()
    if test == "kernels":
        kernels = rate
        continue
    rows.setdefault((model, int(threads)), {}).setdefault((tool, test), []).append((float(rate), float(share)))
tests = ["pp" + p for p in sys.argv[2:-1]] + ["tg" + sys.argv[-1]]
head = "| model | threads |"
for t in tests:
    head += f" valet {t} | llama.cpp {t} | ratio |" + (" % of int8 peak |" if t.startswith("pp") else "")
print(f"valet: {kernels} kernels", file=sys.stderr)
print(head)
print("|---|---:|" + "".join("---:|---:|---:|" + ("---:|" if t.startswith("pp") else "") for t in tests))
for (model, threads), cells in sorted(rows.items()):
    line = f"| {os.path.basename(model)} | {threads} |"
    for t in tests:
        v = statistics.median(r for r, _ in cells[("valet", t)])
        l = statistics.median(r for r, _ in cells[("llama", t)])
        line += f" {v:.1f} | {l:.1f} | {v / l:.2f} |"
        if t.startswith("pp"):
            share = statistics.median(s for _, s in cells[("valet", t)])
            line += f" {100 * share:.0f}% |" if share >= 0 else " – |"
    print(line)
EOF
