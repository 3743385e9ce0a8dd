#!/usr/bin/env bash
# Builds the libFuzzer targets in build-fuzz/ and runs each for N seconds
# (default 60), all at once: the GGUF reader (model files), the
# chat-template engine (the templates models carry), the HTTP server (what
# clients send) and, for at most 10 s so that CI's time does not grow, the
# constraint compilers (GBNF, JSON Schema, regex: what requests carry) with
# the matcher and token mask. Exits
# non-zero when a fuzzer finds a crash; the input is left in
# build-fuzz/fuzz-artifacts/.
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"
mkdir -p "$build"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVALET_BUILD_FUZZ=ON \
  -DVALET_BUILD_TESTS=OFF -DVALET_BUILD_BENCH=OFF >"$build/cmake.log" 2>&1 ||
  { cat "$build/cmake.log"; exit 1; }
ninja -C "$build" gguf_fuzz chat_template_fuzz server_request_fuzz gbnf_fuzz make_gguf_seeds

seeds="$root/fuzz/corpus"       # regenerated each run, ignored by git
artifacts="$build/fuzz-artifacts"
mkdir -p "$seeds" "$build/gguf-corpus" "$build/template-corpus" "$artifacts"
"$build/fuzz/make_gguf_seeds" "$seeds"

# fuzz NAME TITLE BINARY ARGS...: one fuzzer in the background, its log in build-fuzz/NAME.log.
source "$root/scripts/parallel.sh"
titled() {  # titled TITLE COMMAND...
  echo "== $1, ${seconds} s"
  shift
  "$@"
}
titled_for() {  # titled_for SECONDS TITLE COMMAND...
  echo "== $2, $1 s"
  shift 2
  "$@"
}
fuzz() {
  local name="$1" title="$2"
  shift 2
  bg_start "the $name fuzzer" "$build/$name.log" titled "$title" "$@"
}

fuzz gguf "GGUF reader" "$build/fuzz/gguf_fuzz" \
  -max_len=65536 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -dict="$root/fuzz/gguf.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
  "$build/gguf-corpus" "$seeds"

# Real templates seed it when ../shared is here; the fuzzer starts from
# nothing otherwise.
template_seeds=()
[ -d "$root/../shared/chat-templates" ] && template_seeds=("$root/../shared/chat-templates")
fuzz template "chat templates" "$build/fuzz/chat_template_fuzz" \
  -max_len=20000 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 \
  "$build/template-corpus" "${template_seeds[@]}"

# The server from raw bytes: seeded with one request per endpoint.
server_seeds="$build/server-seeds"
mkdir -p "$build/server-corpus" "$server_seeds"
seed() { printf '%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s' "$1" "$2" "${#3}" "$3" >"$server_seeds/$4"; }
seed POST /v1/chat/completions '{"messages":[{"role":"system","content":"S"},{"role":"user","content":"hi"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true},"stop":["x"],"tier":"background_summary"}' chat
seed POST /v1/completions '{"prompt":[1,2,3],"max_tokens":2,"temperature":0.5,"seed":7,"priority":5}' completion
seed POST /v1/completions '{"prompt":"text","max_tokens":2,"stream":true}' completion-stream
seed POST /v1/lifecycle '{"event":"ON_PAUSE"}' lifecycle
seed POST /tokenize '{"content":"hello","add_special":true}' tokenize
seed GET /v1/tasks '' tasks
seed POST /v1/completions '{"prompt":"text","max_tokens":2,"durable":true,"durable_key":"k-1"}' durable
seed GET /v1/tasks/k-1/result '' durable-result
seed DELETE /v1/tasks/k-1 '' durable-delete
printf 'POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"pro\r\nF\r\nmpt":"a","n":1}\r\n0\r\n\r\nGET /health HTTP/1.1\r\n\r\n' >"$server_seeds/chunked-pipelined"
fuzz server "HTTP server" "$build/fuzz/server_request_fuzz" \
  -max_len=8192 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 \
  "$build/server-corpus" "$server_seeds"

# Grammars (GBNF text, NUL, bytes to feed), seeded from fuzz/gbnf/.
gbnf_seconds=$(( seconds < 10 ? seconds : 10 ))
mkdir -p "$build/gbnf-corpus"
bg_start "the gbnf fuzzer" "$build/gbnf.log" titled_for "$gbnf_seconds" "GBNF grammars" "$build/fuzz/gbnf_fuzz" \
  -max_len=4096 -max_total_time="$gbnf_seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 \
  "$build/gbnf-corpus" "$root/fuzz/gbnf"

bg_wait_all || { echo "the crashing inputs are in $artifacts/"; exit 1; }
