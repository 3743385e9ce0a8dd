#!/usr/bin/env bash
# Side by side over HTTP: `valet bench-serve` (chat under indexing: idle and
# under-indexing blocks interleaved) against valet serve, then against
# llama.cpp's llama-server with -np 1 and with -np 2, on the same GGUF file and
# thread count, in one run; prints one markdown table of chat TTFT, TPOT and
# the indexer's throughput, with the load average.
#
#   scripts/bench-serve-vs-llamacpp.sh [-t THREADS] [-n TURNS] [-s SEED] [-o DIR] [MODEL.gguf]
#
# Without a model it synthesizes the bench model (Q8_0) into build/models/.
# Each server gets the same context per sequence (the model's 2048; llama-server
# -np 2 gets -c 4096, which it splits between its slots). The per-server JSON
# reports stay in DIR (default: a temporary directory, removed). Needs a built
# valet (scripts/build.sh) and ../shared/peer/bin/llama-server.
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VALET="${VALET:-$VALET_ROOT/build/tools/valet}"
LLAMA_SERVER="${LLAMA_SERVER:-$VALET_ROOT/../shared/peer/bin/llama-server}"

threads=2
turns=24
seed=1
outdir=""
while getopts "t:n:s:o:" opt; do
  case "$opt" in
    t) threads="$OPTARG" ;;
    n) turns="$OPTARG" ;;
    s) seed="$OPTARG" ;;
    o) outdir="$OPTARG" ;;
    *) sed -n '2,15p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

[ -x "$VALET" ] || { echo "bench-serve-vs-llamacpp: build valet first (scripts/build.sh)" >&2; exit 2; }
[ -x "$LLAMA_SERVER" ] || { echo "bench-serve-vs-llamacpp: $LLAMA_SERVER not found" >&2; exit 2; }

model="${1:-}"
if [ -z "$model" ]; then
  mkdir -p "$VALET_ROOT/build/models"
  model="$VALET_ROOT/build/models/valet-bench-q8_0.gguf"
  [ -f "$model" ] || "$VALET" synth-model --preset bench --type q8_0 -o "$model" >&2
fi
[ -f "$model" ] || { echo "bench-serve-vs-llamacpp: no model $model" >&2; exit 2; }

tmpdir=""
if [ -z "$outdir" ]; then
  tmpdir="$(mktemp -d)"
  outdir="$tmpdir"
fi
mkdir -p "$outdir"

server_pid=""
# A fresh port per server: the last one's connections may linger in TIME_WAIT.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
cleanup() {
  stop_server
  [ -z "$tmpdir" ] || rm -rf "$tmpdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Waits until GET /health answers 200 (llama-server: once the model is loaded).
wait_healthy() {
  for _ in $(seq 1 600); do
    if python3 -c 'import sys, urllib.request; sys.exit(0 if urllib.request.urlopen(sys.argv[1] + "/health", timeout=2).status == 200 else 1)' \
      "$url" 2>/dev/null; then
      return 0
    fi
    kill -0 "$server_pid" 2>/dev/null || { echo "bench-serve-vs-llamacpp: the server exited; see $outdir/*.log" >&2; return 1; }
    sleep 0.5
  done
  echo "bench-serve-vs-llamacpp: the server never became healthy" >&2
  return 1
}

# run NAME API COMMAND...: starts the server (its --port is appended), runs
# bench-serve, stops the server.
run() {
  local name="$1" api="$2" port
  shift 2
  port="$(free_port)"
  url="http://127.0.0.1:$port"
  echo "== $name: $* --port $port" >&2
  "$@" --port "$port" >"$outdir/$name.log" 2>&1 &
  server_pid=$!
  wait_healthy
  "$VALET" bench-serve --url "$url" --api "$api" --turns "$turns" --seed "$seed" \
    --model "$(basename "$model" .gguf)" --json >"$outdir/$name.json"
  stop_server
}

echo "bench-serve vs llama-server: $(basename "$model"), -t $threads, $turns turns per arm, seed $seed" >&2
run "valet" openai "$VALET" serve -m "$model" -t "$threads"
run "llama-server-np1" llamacpp "$LLAMA_SERVER" -m "$model" -t "$threads" -np 1 -c 2048 --no-webui
run "llama-server-np2" llamacpp "$LLAMA_SERVER" -m "$model" -t "$threads" -np 2 -c 4096 --no-webui

python3 - "$outdir" "$model" "$threads" <<'EOF'
import json, os, sys
outdir, model, threads = sys.argv[1], sys.argv[2], sys.argv[3]

def ms(p, key):
    return f"{p[key]:.0f}" if key in p else "–"

def tail(p):
    # p99 only with enough samples; otherwise the max, marked as such.
    return ms(p, "p99") if "p99" in p else ms(p, "max") + " (max)"

print("| server | arm | chat turns | TTFT p50 (ms) | TTFT p90 | TTFT p99 | TPOT p50 (ms) | E2E p50 (ms) | indexer tok/s | TTFT p50 / idle |")
print("|---|---|---|---|---|---|---|---|---|---|")
loads = []
for name in ("valet", "llama-server-np1", "llama-server-np2"):
    with open(os.path.join(outdir, name + ".json")) as f:
        r = json.load(f)
    loads.append(f"{name}: {r['load_average']}")
    idle = r["arms"]["idle"]["ttft_ms"].get("p50")
    for arm in ("idle", "under_indexing"):
        a = r["arms"][arm]
        t = a["ttft_ms"]
        ratio = f"{t['p50'] / idle:.2f}x" if idle and "p50" in t else "–"
        print(f"| {name} | {arm} | {a['completed']}/{a['planned']} | {ms(t, 'p50')} | {ms(t, 'p90')} | {tail(t)} | "
              f"{ms(a['tpot_ms'], 'p50')} | {ms(a['e2el_ms'], 'p50')} | {a['indexer_throughput']:.0f} | {ratio} |")
print()
print(f"model {os.path.basename(model)}, {threads} threads; " + "; ".join(loads))
EOF
