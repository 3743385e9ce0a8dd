#!/usr/bin/env python3
"""Kill soak of durable tasks over HTTP: `valet serve --snapshot-dir` runs
seeded durable completions and is SIGKILLed again and again, at a random
moment from outside, in the middle of a journal append, or between a KV
checkpoint's write and its rename (`valet serve --fault`, the test seam of
docs/durable.md); each new server recovers the tasks at start-up. At the
end every task's GET /v1/tasks/{id}/result must equal what an uninterrupted
server answers for the same requests, and DELETE must forget it.

Then a full-disk phase: batches of the same tasks journal on a small tmpfs
that a file fills at a random point of each batch's run. Each task must park
("PARKED", "journal_io"), new durable requests must be refused with 507,
half the time the server is killed while they wait and restarted on the
still full disk, and once the file is gone they go on when a lifecycle
event or a poll of /result retries. Every 200 any server gave for a task,
in either phase, must equal the uninterrupted run's result. The tmpfs is
mounted in a mount namespace of the script's own (as root, or through a
user namespace), so nothing outlives it.

usage: soak-durable-serve.py --valet build/tools/valet --model MODEL [--kills 20] [--full-disk 4] [--seed 1]
Exit status 0 when there were at least --kills kills, no task was lost and
none changed; the summary is one JSON line.
"""
import argparse, errno, http.client, json, os, random, re, shutil, signal, subprocess, sys, tempfile, time, \
    urllib.error, urllib.request

TASKS = 3
MAX_TOKENS = 440  # the tiny model's context is 512
POLL_S = 0.02  # between GETs of a result that is not ready (202)
DONE_TIMEOUT_S = 300
DISK = "4m"  # the full-disk phase's tmpfs: room for the journals, not for many KV checkpoints
IN_NAMESPACE = "VALET_SOAK_DURABLE_NS"  # set by the script for its own re-run in a mount namespace


def requests():
    """The seeded durable completions every server is given."""
    prompts = ["Once upon a time, there was a little", "The dog ran to the park and", "In the beginning the"]
    return [{"prompt": prompts[i], "max_tokens": MAX_TOKENS, "temperature": 0.8, "repeat_penalty": 1.1,
             "seed": 100 + i, "durable": True} for i in range(TASKS)]


LIVE = []  # every server started, so that none outlives the script


class Server:
    def __init__(self, args, snapshot_dir, fault=None):
        self.proc = subprocess.Popen([args.valet, "serve", "-m", args.model, "--port", "0", "-t", "1",
                                      "--snapshot-dir", snapshot_dir] + (["--fault", fault] if fault else []),
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        LIVE.append(self)
        self.port = None
        for line in self.proc.stdout:  # recovery lines, then the listening line
            m = re.search(r"listening on \S*:(\d+)", line) or re.search(r":(\d+) ", line)
            if m and "durable task" not in line:
                self.port = int(m.group(1))
                break
        if self.port is None:
            raise RuntimeError(f"the server did not start (exit {self.proc.wait()})")

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        return self.proc.wait()


def submit_all(server):
    ids = []
    for body in requests():
        status, reply = server.call("POST", "/v1/completions", body)
        if status != 202 or reply.get("object") != "valet.task":
            raise RuntimeError(f"durable submit answered {status} {reply}")
        ids.append(reply["id"])
    return ids


SERVED = {}  # id -> every text a server answered /result with 200


def result(server, i):
    """/result's text, or None while it answers 202; every 200 is kept in SERVED."""
    status, reply = server.call("GET", f"/v1/tasks/{i}/result")
    if status == 202:
        return None
    if status != 200:
        raise RuntimeError(f"/v1/tasks/{i}/result answered {status} {reply}")
    text = reply["choices"][0]["text"]
    SERVED.setdefault(i, set()).add(text)
    return text


def results(server, ids):
    """{id: completion text} once every task is done (polling /result's 202s)."""
    out, deadline = {}, time.monotonic() + DONE_TIMEOUT_S
    while len(out) < len(ids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"tasks not done after {DONE_TIMEOUT_S} s: {sorted(set(ids) - set(out))}")
        for i in ids:
            text = out.get(i) or result(server, i)
            if text is not None:
                out[i] = text
        time.sleep(POLL_S)
    return out


def all_done(server, ids):
    return all(result(server, i) is not None for i in ids)


def one_life(args, snapshot_dir, rng, ids):
    """Runs a server (submitting the tasks on the first life) until it dies
    or every task is done; returns (ids, how it was killed or None, done)."""
    mode = "signal" if ids is None else rng.choice(["signal", "journal", "checkpoint"])
    fault = {"signal": None, "journal": f"journal-append:{rng.randint(2, 40)}:{rng.randint(0, 63)}",
             "checkpoint": f"checkpoint-rename:{rng.randint(1, 2)}"}[mode]
    server = Server(args, snapshot_dir, fault)
    done = False
    try:
        if ids is None:
            ids = submit_all(server)
        if mode == "signal":
            time.sleep(rng.uniform(0.001, 0.03))  # a random moment is the point here
            done = all_done(server, ids)
        while mode != "signal" and server.alive() and not done:
            if mode == "checkpoint":  # ON_STOP writes every durable task's KV checkpoint
                for event in ["ON_PAUSE", "ON_STOP", "ON_START", "ON_RESUME"]:
                    server.call("POST", "/v1/lifecycle", {"event": event})
            else:
                time.sleep(POLL_S)
            done = all_done(server, ids)
    except (OSError, http.client.HTTPException):
        pass  # it died under the call
    # A fault switch kills the server itself; otherwise it is killed here.
    how = "fault" if server.proc.poll() == -signal.SIGKILL else "signal"
    killed = not done and (how == "fault" or server.alive())
    server.kill()
    return ids, (f"{mode}:{how}" if killed else None), done


def fill(mnt):
    """Takes every free byte of the file system at `mnt` with one file."""
    fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 16, 4096, 1):
            while True:
                try:
                    os.write(fd, b"x" * size)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)


def states(server, ids):
    """{id: the status of /v1/tasks/{id}}."""
    out = {}
    for i in ids:
        status, reply = server.call("GET", f"/v1/tasks/{i}")
        if status != 200:
            raise RuntimeError(f"/v1/tasks/{i} answered {status} {reply}")
        out[i] = reply
    return out


def wait_for(what, check):
    deadline = time.monotonic() + DONE_TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not {what} after {DONE_TIMEOUT_S} s")
        time.sleep(POLL_S)


def waiting_for_disk(task):
    return task["state"] == "PARKED" and task.get("reason") == "journal_io"


def all_parked_or_done(server, ids):
    """Every task waits for the disk or has ended (its result fitted):
    /result is polled as a client would, each 200 kept."""
    tasks = states(server, ids)
    for i, task in tasks.items():
        if task["state"] == "DONE":
            result(server, i)
        elif waiting_for_disk(task) and result(server, i) is not None:
            raise RuntimeError(f"{i} answered 200 while parked")
    return all(t["state"] == "DONE" or waiting_for_disk(t) for t in tasks.values())


def full_disk_phase(args, root, rng):
    """Cycles of submit, fill, park (a kill and a restart while parked half
    the time), free and retry on a small tmpfs, each cycle with a new batch
    of the tasks (the last ones may have ended); returns every batch's ids
    and what happened, leaving the tasks to a final server."""
    mnt = os.path.join(root, "small-disk")
    os.mkdir(mnt, 0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK},mode=0700", "tmpfs", mnt], check=True)
    snapshot_dir = os.path.join(mnt, "snapshots")
    seen = {"fills": 0, "parked": 0, "refused": 0, "killed_parked": 0, "retry": {"poll": 0, "lifecycle": 0}}
    server, ids = Server(args, snapshot_dir), []
    for _ in range(args.full_disk):
        batch = submit_all(server)
        ids += batch
        target = rng.randrange(1, TASKS * MAX_TOKENS // 2)
        wait_for(f"{target} tokens", lambda: all_done(server, batch) or
                 sum(len(t["tokens"]) for t in states(server, batch).values()) >= target)
        fill(mnt)
        seen["fills"] += 1
        wait_for("parked or done", lambda: all_parked_or_done(server, ids))
        seen["parked"] += sum(waiting_for_disk(t) for t in states(server, ids).values())
        status, reply = server.call("POST", "/v1/completions", requests()[0])
        if status != 507 or reply["error"]["code"] != "durable_budget_exhausted":
            raise RuntimeError(f"a durable request on a full disk answered {status} {reply}")
        seen["refused"] += 1
        if rng.random() < 0.5:
            server.kill()
            server = Server(args, snapshot_dir)
            seen["killed_parked"] += 1
            wait_for("parked or done after a restart", lambda: all_parked_or_done(server, ids))
        os.remove(os.path.join(mnt, "filler"))
        trigger = rng.choice(["poll", "lifecycle"])
        seen["retry"][trigger] += 1
        if trigger == "lifecycle":  # and nothing else may move them: no /result here
            for event in ["ON_PAUSE", "ON_RESUME"]:
                status, reply = server.call("POST", "/v1/lifecycle", {"event": event})
                if status != 200:
                    raise RuntimeError(f"{event} answered {status} {reply}")
            wait_for("going on after a lifecycle event",
                     lambda: not any(waiting_for_disk(t) for t in states(server, ids).values()))
        else:
            wait_for("going on after polling", lambda: all(
                result(server, i) is not None or not waiting_for_disk(t) for i, t in states(server, ids).items()))
    server.kill()
    return ids, seen, mnt


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--valet", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--full-disk", type=int, default=4, metavar="N", help="times the disk fills (0: no such phase)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if args.full_disk and os.environ.get(IN_NAMESPACE) != "1":
        unshare = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--mount"]
        os.execvpe(unshare[0], unshare + [sys.executable] + sys.argv, dict(os.environ, **{IN_NAMESPACE: "1"}))
    rng = random.Random(args.seed)
    root = tempfile.mkdtemp(prefix="valet-soak-durable-")
    mnt, disk = None, {}
    try:
        reference = Server(args, os.path.join(root, "reference"))
        ref_ids = submit_all(reference)
        expected = [results(reference, ref_ids)[i] for i in ref_ids]
        reference.kill()

        killed_dir = os.path.join(root, "killed")
        ids, kills, done = None, {}, False
        while sum(kills.values()) < args.kills and not done:
            ids, killed, done = one_life(args, killed_dir, rng, ids)
            if killed:
                kills[killed] = kills.get(killed, 0) + 1
        final = Server(args, killed_dir)
        got = results(final, ids)
        survived = [got.get(i) for i in ids]
        forgotten = all(final.call("DELETE", f"/v1/tasks/{i}")[0] == 200 and
                        final.call("GET", f"/v1/tasks/{i}")[0] == 404 for i in ids)
        final.kill()
        if args.full_disk:
            disk_ids, disk, mnt = full_disk_phase(args, root, rng)
            final = Server(args, os.path.join(mnt, "snapshots"))
            got = results(final, disk_ids)
            ids += disk_ids
            survived += [got.get(i) for i in disk_ids]
            expected += expected * args.full_disk
            final.kill()
    finally:
        for server in LIVE:
            server.kill()
        if mnt:
            subprocess.run(["umount", mnt])
        shutil.rmtree(root, ignore_errors=True)
    lost = sum(s is None for s in survived)
    mismatched = sum(s is not None and s != e for s, e in zip(survived, expected))
    # Every 200 ever served, in either phase, was the final result.
    changed = sum(len(SERVED.get(i, set()) - {e}) for i, e in zip(ids, expected))
    total = sum(kills.values())
    print(json.dumps({"kills": total, "by_mode": kills, "full_disk": disk, "tasks": len(ids), "lost": lost,
                      "mismatched": mismatched, "changed_200s": changed, "forgotten": forgotten}))
    ok = total >= args.kills and lost == 0 and mismatched == 0 and changed == 0 and forgotten
    return 0 if ok and disk.get("fills", 0) == args.full_disk else 1


if __name__ == "__main__":
    sys.exit(main())
