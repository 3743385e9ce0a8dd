#!/usr/bin/env bash
# From process start to the first token: `valet serve` (with its weights
# cache, made by a first untimed start, and without) against llama.cpp's
# llama-server -np 1 on the same GGUF, runs alternating, page cache warm (the
# file read once before), and cold too where the machine lets root drop the
# page cache. Per server: the median time to /health answering 200 ("ready"),
# to the response of a chat with a 16-token user message and max_tokens 1
# ("first token"; timed from process start; the prompt tokens with the
# model's chat template are printed), the peak RSS (VmHWM) and the anonymous RSS once ready
# (RssAnon: what Android's low-memory killer weighs). Prints one markdown
# table with the CPU and the commit.
#
#   scripts/bench-cold-start.sh [-r RUNS] [-t THREADS] [MODEL.gguf]
#
# MODEL defaults to the 3b-shape Q4_0 model, synthesized into build/models/
# (1.6 GB, about a minute). RUNS (default 3) alternating runs per server.
# Needs a built valet (scripts/build.sh) and ../shared/peer/bin/llama-server
# (LLAMA_SERVER=... for another); run it on a quiet machine.
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VALET="${VALET:-$VALET_ROOT/build/tools/valet}"
LLAMA_SERVER="${LLAMA_SERVER:-$VALET_ROOT/../shared/peer/bin/llama-server}"

runs=3
threads=2
while getopts "r:t:" opt; do
  case "$opt" in
    r) runs="$OPTARG" ;;
    t) threads="$OPTARG" ;;
    *) sed -n '2,18p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ -x "$VALET" ] || { echo "bench-cold-start: build valet first (scripts/build.sh)" >&2; exit 2; }
[ -x "$LLAMA_SERVER" ] || { echo "bench-cold-start: $LLAMA_SERVER not found" >&2; exit 2; }
model="${1:-}"
if [ -z "$model" ]; then
  mkdir -p "$VALET_ROOT/build/models"
  model="$VALET_ROOT/build/models/valet-3b-shape-q4_0.gguf"
  [ -f "$model" ] || "$VALET" synth-model --preset 3b-shape --type q4_0 -o "$model" >&2
fi
[ -f "$model" ] || { echo "bench-cold-start: no model $model" >&2; exit 2; }

exec python3 - "$VALET" "$LLAMA_SERVER" "$model" "$runs" "$threads" "$VALET_ROOT" <<'EOF'
import json, os, shutil, socket, statistics, subprocess, sys, tempfile, time, urllib.error, urllib.request

valet, llama_server, model, runs, threads, root = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
CHAT = {"messages": [{"role": "user", "content": "Tell me one short fact about the sea, in a single sentence."}],
        "max_tokens": 1, "temperature": 0}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def request(port, path, body=None, timeout=600):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def one_run(argv, port):
    """Seconds to ready and to the first token, peak and anonymous RSS (MiB)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{argv[0]} exited {proc.returncode}")
            try:
                if request(port, "/health", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.005)
        ready = time.monotonic() - t0
        anon = status_kib(proc.pid, "RssAnon") / 1024
        status, body = request(port, "/v1/chat/completions", CHAT)
        first = time.monotonic() - t0
        if status != 200:
            raise RuntimeError(f"{argv[0]}: the chat answered {status}: {body[:200]}")
        peak = status_kib(proc.pid, "VmHWM") / 1024
        return ready, first, peak, anon, json.loads(body)["usage"]["prompt_tokens"]
    finally:
        proc.kill()
        proc.wait()


def drop_caches():
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def warm():
    """Reads the model and the weights cache into the page cache."""
    for path in [model] + [e.path for e in os.scandir(cache)]:
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


scratch = tempfile.mkdtemp(prefix="valet-cold-start-")
cache = os.path.join(scratch, "weights") + "/"
servers = {
    "valet serve, weights cache": lambda p: [valet, "serve", "-m", model, "-t", threads, "--port", str(p),
                                             "--weights-cache", cache],
    "valet serve, no cache": lambda p: [valet, "serve", "-m", model, "-t", threads, "--port", str(p)],
    "llama-server -np 1": lambda p: [llama_server, "-m", model, "-t", threads, "--port", str(p), "-np", "1",
                                     "--host", "127.0.0.1"],
}
try:
    subprocess.run([valet, "pack", "-m", model, "-o", cache], check=True, stdout=subprocess.DEVNULL)
    kinds = ["warm"] + (["cold"] if drop_caches() else [])
    results = {(k, name): [] for k in kinds for name in servers}
    for _ in range(runs):
        for kind in kinds:
            for name, argv in servers.items():
                drop_caches() if kind == "cold" else warm()
                port = free_port()
                results[(kind, name)].append(one_run(argv(port), port))
finally:
    shutil.rmtree(scratch, ignore_errors=True)

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
print(f"\n{os.path.basename(model)}, {threads} threads, medians of {runs} alternating runs; {cpu}; valet {commit}; "
      f"load average {os.getloadavg()[0]:.2f}\n")
print("| page cache | server | ready (s) | first token (s) | peak RSS (MiB) | anonymous RSS when ready (MiB) | prompt tokens |")
print("|---|---|---:|---:|---:|---:|---:|")
for (kind, name), rows in results.items():
    med = [statistics.median(r[i] for r in rows) for i in range(4)]
    print(f"| {kind} | {name} | {med[0]:.2f} | {med[1]:.2f} | {med[2]:.0f} | {med[3]:.0f} | {rows[0][4]} |")
EOF
