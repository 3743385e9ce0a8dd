#!/usr/bin/env python3
"""CPU time that `valet serve` and llama.cpp's `llama-server -np 1` spend on the
same model, measured from outside (the sum of every thread's run time in
/proc/PID/task/*/schedstat, in nanoseconds), alternating the servers:

- idle: per second of wall time over --idle-s seconds after one short
  request (whatever a server does between requests: timers, spinning
  workers);
- decode: CPU-seconds per generated token of one greedy completion of
  --tokens tokens (the prompt is a few tokens, so decode dominates);
- chat: CPU-seconds per generated token over --turns chat turns with think
  times of --think-s between them (what the user's phone pays for a
  conversation, waits included).

Both serve a copy of the model whose high byte tokens print as text
(scripts/text-vocab.py: llama-server aborts answers that are not valid
UTF-8, which a random-weight model writes). Prints one markdown table of
medians over --runs alternating runs, with the CPU, the commit and the load
average. Run it on a quiet machine.

usage: bench-cpu-time.py [--valet build/tools/valet] [--llama-server PATH] [--model MODEL]
                         [--threads 2] [--runs 3] [--idle-s 10] [--tokens 128] [--turns 4] [--think-s 2]
"""
import argparse, json, os, shutil, socket, statistics, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # a thread that ended meanwhile
    return total / 1e9


class Server:
    def __init__(self, argv):
        self.port = free_port()
        self.proc = subprocess.Popen([a.replace("{port}", str(self.port)) for a in argv],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"bench-cpu-time: {argv[0]} exited {self.proc.returncode}")
            try:
                if self.request("/health")[0] == 200:
                    return
            except OSError:
                time.sleep(0.05)
        sys.exit(f"bench-cpu-time: {argv[0]} never answered /health")

    def request(self, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, json.loads(r.read() or b"null")

    def complete(self, messages, max_tokens):
        _, body = self.request("/v1/chat/completions", {"messages": messages, "max_tokens": max_tokens,
                                                        "temperature": 0})
        return body["usage"]["completion_tokens"], body["choices"][0]["message"]["content"]

    def cpu(self):
        return cpu_seconds(self.proc.pid)

    def close(self):
        self.proc.kill()
        self.proc.wait()


def one_run(argv, args):
    s = Server(argv)
    try:
        s.complete([{"role": "user", "content": "Hi"}], 4)
        time.sleep(1.0)  # the request's own tail is not idle time
        c0, t0 = s.cpu(), time.monotonic()
        time.sleep(args.idle_s)
        idle = (s.cpu() - c0) / (time.monotonic() - t0)

        c0 = s.cpu()
        n, _ = s.complete([{"role": "user", "content": "Tell me a long story."}], args.tokens)
        decode = (s.cpu() - c0) / max(n, 1)

        messages, generated = [], 0
        c0 = s.cpu()
        for turn in range(args.turns):
            messages.append({"role": "user", "content": f"Question {turn}: what happens next?"})
            n, text = s.complete(messages, 32)
            messages.append({"role": "assistant", "content": text})
            generated += n
            time.sleep(args.think_s)
        chat = (s.cpu() - c0) / max(generated, 1)
        return idle, decode, chat
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--valet", default=os.path.join(ROOT, "build/tools/valet"))
    ap.add_argument("--llama-server", default=os.path.join(ROOT, "../shared/peer/bin/llama-server"))
    ap.add_argument("--model", default=os.path.join(ROOT, "build/models/valet-3b-shape-q4_0.gguf"))
    ap.add_argument("--threads", default="2")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--idle-s", type=float, default=10.0)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--think-s", type=float, default=2.0)
    args = ap.parse_args()
    for path in (args.valet, args.llama_server, args.model):
        if not os.path.exists(path):
            sys.exit(f"bench-cpu-time: {path} not found")
    scratch = tempfile.mkdtemp(prefix="valet-cpu-time-")
    try:
        model = os.path.join(scratch, os.path.basename(args.model))
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts/text-vocab.py"), args.model, model], check=True)
        report(args, model)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def report(args, model):
    servers = {
        "valet serve": [args.valet, "serve", "-m", model, "-t", args.threads, "--port", "{port}"],
        "llama-server -np 1": [args.llama_server, "-m", model, "-t", args.threads, "--port", "{port}",
                               "-np", "1", "--host", "127.0.0.1"],
    }
    load = os.getloadavg()[0]
    results = {name: [] for name in servers}
    for _ in range(args.runs):
        for name, argv in servers.items():
            results[name].append(one_run(argv, args))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"\n{os.path.basename(args.model)}, {args.threads} threads, medians of {args.runs} alternating runs; "
          f"{cpu}; valet {commit}; load average {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end\n")
    print(f"| server | idle: % of a core ({args.idle_s:g} s after a request) | decode: CPU-s per token "
          f"({args.tokens} tokens) | chat: CPU-s per token ({args.turns} turns, {args.think_s:g} s think times) |")
    print("|---|---:|---:|---:|")
    for name, runs in results.items():
        idle, decode, chat = (statistics.median(r[i] for r in runs) for i in range(3))
        print(f"| {name} | {100 * idle:.2f}% | {decode:.3f} | {chat:.3f} |")


if __name__ == "__main__":
    main()
