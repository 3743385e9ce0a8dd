#!/usr/bin/env bash
# Side by side over HTTP: `valet bench-serve` (chat under indexing: idle and
# under-indexing blocks interleaved) against valet serve, then against
# llama.cpp's llama-server with -np 1 and with -np 2, in one run; prints one
# markdown table of chat TTFT, TPOT and the indexer's throughput, with the
# date, the CPU and the load average.
#
#   scripts/bench-serve-vs-llamacpp.sh [-t THREADS] [-n TURNS] [-s SEED] [-i INDEXERS] [-o DIR] [-k] [MODEL.gguf]
#
# -i: indexer documents in flight under chat (bench-serve --indexers, default 1).
#
# What is kept equal, so only the servers differ:
# - the model file: each server loads the same GGUF (default: the synthetic
#   bench model, Q8_0, ~100M parameters, synthesized into build/models/; big
#   enough that an indexer document is seconds of prefill on 2 cores);
# - the threads (-t, default 2) and the context per sequence (the model's
#   2048; llama-server -np 2 gets -c 4096, which it splits between its slots);
# - the requests: the same texts (sized in the server's tokens by its own
#   POST /tokenize; both tokenize the file's vocabulary identically), sent to
#   the same OpenAI endpoints (chat rendered by the model's own template on
#   both sides), the same max_tokens, and greedy decoding (bench-serve
#   --temperature 0: two servers with different random generators still pick
#   the same tokens). Only valet gets the "tier" field; llama-server has none.
#
# The vocabulary fix (-k skips it): a random-weight model samples any token,
# and the synthetic vocabulary's byte tokens 0x80-0xFF are lone UTF-8
# continuation or lead bytes. llama-server (../shared/peer, build 10587) parses
# every answer, on /completion as on its OpenAI endpoints, and aborts the
# request with "The model produced output that does not match the expected
# Content-only format" as soon as the text is not valid UTF-8, so most of its
# turns failed. The script therefore benchmarks a copy of the model whose 128
# high byte tokens are typed NORMAL instead of BYTE (tokenizer.ggml.token_type,
# patched in place: same tensors, same size, same token ids): both servers then
# print such a token as its literal text "<0x80>", every answer is valid
# UTF-8, and nothing else changes (the prompts are ASCII, so the tokenizer
# never needed those tokens).
#
# The per-server JSON reports and logs stay in DIR (default: a temporary
# directory, removed). Needs a built valet (scripts/build.sh) and
# ../shared/peer/bin/llama-server. Run it on a quiet machine: llama.cpp's
# spinning threads slow down badly when other processes want the cores.
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VALET="${VALET:-$VALET_ROOT/build/tools/valet}"
LLAMA_SERVER="${LLAMA_SERVER:-$VALET_ROOT/../shared/peer/bin/llama-server}"

threads=2
turns=24
seed=1
indexers=1
outdir=""
keep_vocab=0
while getopts "t:n:s:i:o:k" opt; do
  case "$opt" in
    t) threads="$OPTARG" ;;
    n) turns="$OPTARG" ;;
    s) seed="$OPTARG" ;;
    i) indexers="$OPTARG" ;;
    o) outdir="$OPTARG" ;;
    k) keep_vocab=1 ;;
    *) sed -n '2,41p' "$0" >&2; exit 2 ;;
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
model_name="$(basename "$model" .gguf)"

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

# text_vocab SRC DST: DST = SRC with the byte tokens <0x80>..<0xFF> typed
# NORMAL (scripts/text-vocab.py); see the header.
text_vocab() {
  python3 "$VALET_ROOT/scripts/text-vocab.py" "$1" "$2"
}

bench_model="$model"
if [ "$keep_vocab" = 0 ]; then
  bench_model="$outdir/$model_name-text.gguf"
  text_vocab "$model" "$bench_model"
fi

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
# bench-serve, stops the server. A run with failed turns still gives its
# report (bench-serve exits 1); the table shows the failures.
run() {
  local name="$1" api="$2" port
  shift 2
  port="$(free_port)"
  url="http://127.0.0.1:$port"
  echo "== $name: $* --port $port" >&2
  "$@" --port "$port" >"$outdir/$name.log" 2>&1 &
  server_pid=$!
  wait_healthy
  "$VALET" bench-serve --url "$url" --api "$api" --turns "$turns" --seed "$seed" --indexers "$indexers" --temperature 0 \
    --model "$model_name" --json >"$outdir/$name.json" || [ -s "$outdir/$name.json" ]
  stop_server
}

echo "bench-serve vs llama-server: $model_name, -t $threads, $turns turns per arm, $indexers indexers, seed $seed, greedy" >&2
run "valet" openai "$VALET" serve -m "$bench_model" -t "$threads"
run "llama-server-np1" llamacpp "$LLAMA_SERVER" -m "$bench_model" -t "$threads" -np 1 -c 2048 --no-webui
run "llama-server-np2" llamacpp "$LLAMA_SERVER" -m "$bench_model" -t "$threads" -np 2 -c 4096 --no-webui

cpu="$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
python3 - "$outdir" "$model_name" "$threads" "$cpu" "$keep_vocab" "$indexers" <<'EOF'
import json, os, sys, time
outdir, model, threads, cpu, keep_vocab, indexers = sys.argv[1:7]

def ms(p, key):
    return f"{p[key]:.0f}" if key in p else "–"

def tail(p):
    # p99 only with enough samples; otherwise the max, marked as such.
    return ms(p, "p99") if "p99" in p else ms(p, "max") + " (max)"

print("| server | arm | chat turns ok | prompt tok/turn | TTFT p50 (ms) | TTFT p90 | TTFT p99 | TPOT p50 (ms) | "
      "E2E p50 (ms) | indexer tok/s | TTFT p50 / idle |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
loads, errors = [], []
for name in ("valet", "llama-server-np1", "llama-server-np2"):
    with open(os.path.join(outdir, name + ".json")) as f:
        r = json.load(f)
    loads.append(f"{name}: {r['load_average'].replace('load average ', '')}")
    idle = r["arms"]["idle"]["ttft_ms"].get("p50")
    for arm in ("idle", "under_indexing"):
        a = r["arms"][arm]
        t = a["ttft_ms"]
        ratio = f"{t['p50'] / idle:.2f}x" if idle and "p50" in t else "–"
        per_turn = a["total_input_tokens"] / a["completed"] if a["completed"] else 0
        index = f"{a['indexer_throughput']:.0f}" if arm != "idle" else "–"
        print(f"| {name} | {arm} | {a['completed']}/{a['planned']} | {per_turn:.0f} | {ms(t, 'p50')} | {ms(t, 'p90')} | "
              f"{tail(t)} | {ms(a['tpot_ms'], 'p50')} | {ms(a['e2el_ms'], 'p50')} | {index} | {ratio} |")
        errors += [f"{name} {arm}: {e}" for e in a["errors"]]
print()
vocab = "vocabulary as is" if keep_vocab == "1" else "byte tokens 0x80-0xFF typed NORMAL"
print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu}, model {model} ({vocab}), {threads} threads, "
      f"{indexers} indexer documents in flight, greedy; load average (1, 5, 15 min) " + "; ".join(loads))
for e in errors:
    print(f"error: {e}")
EOF
