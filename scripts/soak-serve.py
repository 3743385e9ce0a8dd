#!/usr/bin/env python3
"""Soak test for `valet serve`: mixed tiers, clients that leave mid-request,
clients that half-close after their request, slow clients, lifecycle events
and malformed requests for a while, then the
checks that matter to an operator:

  - the server never died;
  - every request that was sent whole and not abandoned got exactly one
    terminal answer (a whole JSON reply, or a stream ending in [DONE]);
  - once the load stops, no task is left unfinished in /v1/tasks;
  - the server's RSS ends within 10% of where it started (after warm-up).

usage: soak-serve.py --valet build/tools/valet --model MODEL [--seconds 600] [--seed 1]
(a warm-up of a fifth of that, at least 5 s and until more tasks have finished
than the server keeps records of, comes first, after a burst of the largest
malformed bodies).
Exit status 0 when every check holds; the summary is one JSON line.
"""
import argparse, asyncio, json, os, random, re, signal, subprocess, sys, time

UNFINISHED = {"QUEUED", "PREFILLING", "DECODING", "PARKED"}
CLIENTS = 48  # concurrent client loops
# The largest malformed bodies, sent this many at once before the warm-up:
# the allocator keeps the high-water mark of such buffers, and how many are
# in flight at once is chance, so the burst sets that mark above what the
# load reaches before RSS is first read (the load sends a few at a time).
BIG_BURST = 6
TASK_HISTORY = 500  # the server's --task-history: finished tasks it keeps records of
WARM_TASKS = 2 * TASK_HISTORY  # finished before RSS is first read, so the records no longer grow
TIERS = ["foreground_chat", "inline_suggestion", "background_summary", "offline_indexing"]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


class Stats:
    def __init__(self):
        self.sent = self.answered = self.abandoned = self.rejected_429 = self.errors_4xx = 0
        self.failures = []  # requests without exactly one terminal answer

    def fail(self, what):
        if len(self.failures) < 20:
            self.failures.append(what)


def request(method, path, body=b"", headers=(), version="HTTP/1.1"):
    head = f"{method} {path} {version}\r\nHost: soak\r\nContent-Type: application/json\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers)
    if body or method == "POST":
        head += f"Content-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


async def read_reply(reader):
    """One whole reply: (status, head, body); raises on a short or bad reply.
    Interim 1xx responses (the server's probe of a half-closed client) are skipped."""
    while True:
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        if not 100 <= status < 200:
            break
    m = re.search(rb"Content-Length: (\d+)", head)
    if m:
        return status, head, await reader.readexactly(int(m.group(1)))
    body = b""
    if b"Transfer-Encoding: chunked" in head:
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            body += await reader.readexactly(size + 2)
            if size == 0:
                return status, head, body
    return status, head, await reader.read()


def terminal(status, head, body):
    """Is this exactly one whole answer?"""
    if b"text/event-stream" in head:
        events = [e for e in body.split(b"\n\n") if e.strip()]
        return bool(events) and events[-1].strip() == b"data: [DONE]" and events.count(b"data: [DONE]") == 1
    if b"application/json" not in head:
        return len(body) > 0  # /metrics: Prometheus text
    try:
        json.loads(body)
        return True
    except ValueError:
        return False


async def connect(port, stats):
    """(reader, writer), or None after counting a failure: a server that refuses connections has died."""
    try:
        return await asyncio.open_connection("127.0.0.1", port)
    except OSError as e:
        stats.fail(f"cannot connect: {e}")
        return None


async def exchange(port, stats, raw, leave_after=None, half_close=False):
    """Sends `raw` (then shuts its sending side, with `half_close`); reads one
    reply, or leaves after `leave_after` bytes of it."""
    conn = await connect(port, stats)
    if conn is None:
        return
    reader, writer = conn
    try:
        writer.write(raw)
        await writer.drain()
        if half_close:
            writer.write_eof()
        stats.sent += 1
        if leave_after is not None:
            await reader.read(leave_after)
            stats.abandoned += 1
            return
        try:
            status, head, body = await asyncio.wait_for(read_reply(reader), 300)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, OSError,
                ValueError) as e:
            stats.fail(f"{raw[:60]!r}: no whole answer ({type(e).__name__})")
            return
        if not terminal(status, head, body):
            stats.fail(f"{raw[:60]!r}: {status} not terminal: {body[-120:]!r}")
            return
        stats.answered += 1
        stats.rejected_429 += status == 429
        stats.errors_4xx += 400 <= status < 500 and status != 429
    finally:
        writer.close()


def completion(rng):
    tier = rng.choice(TIERS)
    stream = rng.random() < 0.5
    n = rng.randint(1, 24)
    if rng.random() < 0.5:
        body = {"messages": [{"role": "system", "content": "You index documents."},
                             {"role": "user", "content": "story %d" % rng.randint(0, 1 << 20)}]}
        path = "/v1/chat/completions"
    else:
        body = {"prompt": "Once upon a time %d" % rng.randint(0, 1 << 20)}
        path = "/v1/completions"
    body.update({"max_tokens": n, "stream": stream, "tier": tier, "temperature": rng.choice([0, 0.8])})
    return request("POST", path, json.dumps(body).encode())


def big_malformed():
    deep = b"[" * 200000 + b"]" * 200000
    return [
        request("POST", "/v1/completions", b'{"prompt": ' + deep + b"}"),
        request("POST", "/v1/lifecycle", b'{"event": ' + deep + b"}"),
        b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + b"100000\r\n" + b"y" * 1100000,
    ]


def malformed(rng):
    return rng.choice(big_malformed() + [
        request("POST", "/v1/completions", b'{"prompt": '),
        request("POST", "/v1/chat/completions", b'{"messages": 5}'),
        request("POST", "/v1/completions", b"x" * (2 << 20)),
        b"GARBAGE\r\n\r\n",
        request("GET", "/nope"),
    ])


async def slow_client(port, stats, rng):
    """Drips a request one byte at a time, slower than the read timeout allows."""
    conn = await connect(port, stats)
    if conn is None:
        return
    reader, writer = conn
    try:
        for b in request("GET", "/health"):
            writer.write(bytes([b]))
            await writer.drain()
            await asyncio.sleep(rng.uniform(0.2, 1.0))
            if reader.at_eof():
                break
    except ConnectionError:
        pass
    finally:
        stats.abandoned += 1
        writer.close()


async def lifecycle(port, stats, deadline, rng):
    cycles = [["ON_PAUSE", "ON_RESUME"], ["ON_PAUSE", "ON_STOP", "ON_START", "ON_RESUME"]]
    while time.monotonic() < deadline:
        for event in rng.choice(cycles):
            await exchange(port, stats, request("POST", "/v1/lifecycle", json.dumps({"event": event}).encode()))
            await asyncio.sleep(rng.uniform(0.1, 1.5))


async def client(port, stats, deadline, rng):
    while time.monotonic() < deadline and len(stats.failures) < 20:
        r = rng.random()
        if r < 0.70:
            await exchange(port, stats, completion(rng), half_close=rng.random() < 0.1)
        elif r < 0.80:
            await exchange(port, stats, completion(rng), leave_after=rng.randint(0, 200))
        elif r < 0.90:
            await exchange(port, stats, malformed(rng))
        elif r < 0.95:
            await exchange(port, stats, request("GET", rng.choice(["/health", "/metrics", "/v1/tasks"])))
        else:
            await slow_client(port, stats, rng)


async def get(port, path):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request("GET", path))
    await writer.drain()
    _, _, body = await read_reply(reader)
    writer.close()
    return body


async def get_json(port, path):
    return json.loads(await get(port, path))


async def tasks_finished(port):
    text = (await get(port, "/metrics")).decode()
    return sum(float(v) for v in re.findall(r"^valet_tasks_finished_total\{[^}]*\} (\S+)$", text, re.M))


async def load(port, stats, seconds, seed):
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    tasks = [client(port, stats, deadline, random.Random(rng.random())) for _ in range(CLIENTS)]
    tasks.append(lifecycle(port, stats, deadline, random.Random(rng.random())))
    await asyncio.gather(*tasks)


async def drain(port, stats):
    """Leaves the app in the foreground so background work can finish; the tasks still unfinished after 2 min."""
    await exchange(port, stats, request("POST", "/v1/lifecycle", b'{"event": "ON_RESUME"}'))
    deadline = time.monotonic() + 120
    while True:
        left = [t for t in (await get_json(port, "/v1/tasks"))["data"] if t["state"] in UNFINISHED]
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.5)


async def main_async(args, port, pid):
    # Warm-up with the same mix, so the model's pages, the allocator's
    # high-water marks and the histories the server keeps on purpose (the
    # scheduler's records of its last 4,096 finished tasks, RecorderLimits)
    # are full before the first RSS reading: what is measured is growth
    # under load, i.e. leaks.
    warm_seed = args.seed + 1
    await asyncio.gather(*[exchange(port, Stats(), raw) for raw in big_malformed() for _ in range(BIG_BURST)])
    await load(port, Stats(), max(5.0, args.seconds / 5), warm_seed)
    while await tasks_finished(port) < WARM_TASKS:
        warm_seed += 1
        await load(port, Stats(), 5.0, warm_seed)
    await drain(port, Stats())
    rss_start = rss_kib(pid)
    stats = Stats()
    await load(port, stats, args.seconds, args.seed)
    left = await drain(port, stats)
    return stats, left, rss_start, rss_kib(pid)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--valet", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--seconds", type=float, default=600)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    server = subprocess.Popen([args.valet, "serve", "-m", args.model, "--port", "0", "-t", "1",
                               "--task-history", str(TASK_HISTORY)],
                              stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    m = re.search(r":(\d+) ", line)
    if not m:
        print(f"soak-serve: the server did not start: {line!r}", file=sys.stderr)
        return 1
    stats, left, rss_start, rss_end = asyncio.run(main_async(args, int(m.group(1)), server.pid))
    alive = server.poll() is None
    server.send_signal(signal.SIGTERM)
    clean_exit = server.wait(timeout=60) == 0
    summary = {
        "seconds": args.seconds, "sent": stats.sent, "answered": stats.answered, "abandoned": stats.abandoned,
        "rejected_429": stats.rejected_429, "errors_4xx": stats.errors_4xx, "without_one_answer": len(stats.failures),
        "unfinished_tasks_left": len(left or []), "rss_start_kib": rss_start, "rss_end_kib": rss_end,
        "server_alive": alive, "clean_exit": clean_exit,
    }
    print(json.dumps(summary))
    for f in stats.failures:
        print("  " + f, file=sys.stderr)
    ok = alive and clean_exit and not stats.failures and not left and rss_end <= rss_start * 1.10
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
