#!/usr/bin/env python3
"""Soak test for `valet serve`: mixed tiers, clients that leave mid-request,
clients that half-close after their request, slow clients, lifecycle events
and malformed requests for a while, then the
checks that matter to an operator:

  - the server never died;
  - every request that was sent whole and not abandoned, in the warm-up
    too, got exactly one terminal answer (a whole JSON reply, or a stream ending in [DONE]), with
    the status its kind is owed: 200 for a completion (or 429 when its tier's
    queue is full), with choices and no error event in it; 200 for the status
    endpoints and lifecycle events; 400, 404 or 413 for each kind of
    malformed request; 408 for a client that drips its request too slowly;
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
        self.sent = self.answered = self.abandoned = self.rejected_429 = self.errors_4xx = self.timed_out_408 = 0
        self.failures = []  # requests without exactly one terminal answer with the status they are owed

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


class Owed:
    """What a kind of request must be answered with: one of `statuses`, and
    for a completion's 200 an answer with choices and no error."""

    def __init__(self, *statuses, completion=False):
        self.statuses, self.completion = statuses, completion


# A completion may be turned away with a 429 when its tier's queue is full
# (the load keeps 48 clients busy); no other status is owed to it. An
# operator's 200 for a malformed request, or a 400 for a good one, is as
# wrong as no answer.
COMPLETION = Owed(200, 429, completion=True)
OK = Owed(200)


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


def not_owed(status, head, body, owed):
    """Why a whole answer is not the one owed; None when it is."""
    if status not in owed.statuses:
        return f"status {status}, owed {'/'.join(map(str, owed.statuses))}: {body[-120:]!r}"
    if not owed.completion or status != 200:
        return None
    if b"text/event-stream" not in head:
        return None if "choices" in json.loads(body) else f"a 200 without choices: {body[-120:]!r}"
    for event in body.split(b"\n\n"):
        if event.startswith(b"data: {") and "error" in json.loads(event[6:]):
            return f"a stream that failed: {event[:160]!r}"
    return None


async def connect(port, stats):
    """(reader, writer), or None after counting a failure: a server that refuses connections has died."""
    try:
        return await asyncio.open_connection("127.0.0.1", port)
    except OSError as e:
        stats.fail(f"cannot connect: {e}")
        return None


def count(stats, status):
    stats.answered += 1
    stats.rejected_429 += status == 429
    stats.timed_out_408 += status == 408
    stats.errors_4xx += 400 <= status < 500 and status not in (408, 429)


async def exchange(port, stats, raw, owed, leave_after=None, half_close=False):
    """Sends `raw` (then shuts its sending side, with `half_close`); reads one
    reply, which must be what `owed` says, or leaves after `leave_after` bytes of it."""
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
        wrong = not_owed(status, head, body, owed)
        if wrong:
            stats.fail(f"{raw[:60]!r}: {wrong}")
            return
        count(stats, status)
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
    """(request, owed): JSON nested past the limit is a 400; a chunk as large
    as the body limit passes the size check, and the bytes after it, which are
    no CRLF, are a 400 too."""
    deep = b"[" * 200000 + b"]" * 200000
    return [
        (request("POST", "/v1/completions", b'{"prompt": ' + deep + b"}"), Owed(400)),
        (request("POST", "/v1/lifecycle", b'{"event": ' + deep + b"}"), Owed(400)),
        (b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + b"100000\r\n" + b"y" * 1100000,
         Owed(400)),
    ]


def malformed(rng):
    """(request, owed): bad JSON and bodies are 400s, a body over the limit a 413, a path no route has a 404."""
    return rng.choice(big_malformed() + [
        (request("POST", "/v1/completions", b'{"prompt": '), Owed(400)),
        (request("POST", "/v1/chat/completions", b'{"messages": 5}'), Owed(400)),
        (request("POST", "/v1/completions", b"x" * (2 << 20)), Owed(413)),
        (b"GARBAGE\r\n\r\n", Owed(400)),
        (request("GET", "/nope"), Owed(404)),
    ])


async def slow_client(port, stats, rng):
    """Drips a request one byte at a time, slower than the head timeout (5 s)
    allows, until the server answers: a 408, read as any other answer while
    the drip goes on."""
    conn = await connect(port, stats)
    if conn is None:
        return
    reader, writer = conn
    stats.sent += 1
    reply = asyncio.ensure_future(asyncio.wait_for(read_reply(reader), 300))
    try:
        for b in request("GET", "/health"):
            if reply.done():
                break
            writer.write(bytes([b]))
            await writer.drain()
            await asyncio.wait([reply], timeout=rng.uniform(0.2, 1.0))
    except ConnectionError:
        pass  # the server closed after its answer, which `reply` has read
    try:
        status, head, body = await reply
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, OSError, ValueError) as e:
        stats.fail(f"slow client: no whole answer ({type(e).__name__})")
        return
    finally:
        writer.close()
    wrong = not_owed(status, head, body, Owed(408)) if terminal(status, head, body) else f"{status} not terminal"
    if wrong:
        stats.fail(f"slow client: {wrong}")
    else:
        count(stats, status)


async def lifecycle(port, stats, deadline, rng):
    # Each cycle is in order and ends RESUMED, as the server starts: every event is owed a 200.
    cycles = [["ON_PAUSE", "ON_RESUME"], ["ON_PAUSE", "ON_STOP", "ON_START", "ON_RESUME"]]
    while time.monotonic() < deadline:
        for event in rng.choice(cycles):
            await exchange(port, stats, request("POST", "/v1/lifecycle", json.dumps({"event": event}).encode()), OK)
            await asyncio.sleep(rng.uniform(0.1, 1.5))


async def client(port, stats, deadline, rng):
    while time.monotonic() < deadline and len(stats.failures) < 20:
        r = rng.random()
        if r < 0.70:
            await exchange(port, stats, completion(rng), COMPLETION, half_close=rng.random() < 0.1)
        elif r < 0.80:
            await exchange(port, stats, completion(rng), COMPLETION, leave_after=rng.randint(0, 200))
        elif r < 0.90:
            await exchange(port, stats, *malformed(rng))
        elif r < 0.95:
            await exchange(port, stats, request("GET", rng.choice(["/health", "/metrics", "/v1/tasks"])), OK)
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
    # The lifecycle loop ends every cycle it starts, RESUMED; a RESUMED app is
    # owed a 409 for another ON_RESUME, so it is sent only if needed.
    if (await get_json(port, "/health"))["lifecycle"] != "RESUMED":
        await exchange(port, stats, request("POST", "/v1/lifecycle", b'{"event": "ON_RESUME"}'), OK)
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
    # Its answers are held to the same checks: only RSS waits for the warm-up.
    warm = Stats()
    warm_seed = args.seed + 1
    await asyncio.gather(*[exchange(port, warm, raw, owed) for raw, owed in big_malformed() for _ in range(BIG_BURST)])
    await load(port, warm, max(5.0, args.seconds / 5), warm_seed)
    while not warm.failures and await tasks_finished(port) < WARM_TASKS:
        warm_seed += 1
        await load(port, warm, 5.0, warm_seed)
    await drain(port, warm)
    rss_start = rss_kib(pid)
    stats = Stats()
    if not warm.failures:
        await load(port, stats, args.seconds, args.seed)
    left = await drain(port, stats)
    return warm, stats, left, rss_start, rss_kib(pid)


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
    warm, stats, left, rss_start, rss_end = asyncio.run(main_async(args, int(m.group(1)), server.pid))
    alive = server.poll() is None
    server.send_signal(signal.SIGTERM)
    clean_exit = server.wait(timeout=60) == 0
    summary = {
        "seconds": args.seconds, "sent": stats.sent, "answered": stats.answered, "abandoned": stats.abandoned,
        "rejected_429": stats.rejected_429, "errors_4xx": stats.errors_4xx, "timed_out_408": stats.timed_out_408,
        "without_the_answer_owed": len(stats.failures), "warm_up_sent": warm.sent,
        "warm_up_without_the_answer_owed": len(warm.failures),
        "unfinished_tasks_left": len(left or []), "rss_start_kib": rss_start, "rss_end_kib": rss_end,
        "server_alive": alive, "clean_exit": clean_exit,
    }
    print(json.dumps(summary))
    for f in warm.failures:
        print("  warm-up: " + f, file=sys.stderr)
    for f in stats.failures:
        print("  " + f, file=sys.stderr)
    ok = (alive and clean_exit and not warm.failures and not stats.failures and not left
          and rss_end <= rss_start * 1.10)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
