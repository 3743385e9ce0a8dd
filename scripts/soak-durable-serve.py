#!/usr/bin/env python3
"""Kill soak of durable tasks over HTTP: `valet serve --snapshot-dir` runs
seeded durable completions and is SIGKILLed again and again, at a random
moment from outside, in the middle of a journal append, or between a KV
checkpoint's write and its rename (VALET_FAULT, docs/durable.md); each new
server recovers the tasks at start-up. At the end every task's
GET /v1/tasks/{id}/result must equal what an uninterrupted server answers
for the same requests, and DELETE must forget it.

usage: soak-durable-serve.py --valet build/tools/valet --model MODEL [--kills 20] [--seed 1]
Exit status 0 when there were at least --kills kills, no task was lost and
none changed; the summary is one JSON line.
"""
import argparse, http.client, json, os, random, re, shutil, signal, subprocess, sys, tempfile, time, urllib.error, urllib.request

TASKS = 3
MAX_TOKENS = 440  # the tiny model's context is 512
POLL_S = 0.02  # between GETs of a result that is not ready (202)
DONE_TIMEOUT_S = 300


def requests():
    """The seeded durable completions every server is given."""
    prompts = ["Once upon a time, there was a little", "The dog ran to the park and", "In the beginning the"]
    return [{"prompt": prompts[i], "max_tokens": MAX_TOKENS, "temperature": 0.8, "repeat_penalty": 1.1,
             "seed": 100 + i, "durable": True} for i in range(TASKS)]


LIVE = []  # every server started, so that none outlives the script


class Server:
    def __init__(self, args, snapshot_dir, fault=None):
        env = dict(os.environ)
        env.pop("VALET_FAULT", None)
        if fault:
            env["VALET_FAULT"] = fault
        self.proc = subprocess.Popen([args.valet, "serve", "-m", args.model, "--port", "0", "-t", "1",
                                      "--snapshot-dir", snapshot_dir],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
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


def results(server, ids):
    """{id: completion text} once every task is done (polling /result's 202s)."""
    out, deadline = {}, time.monotonic() + DONE_TIMEOUT_S
    while len(out) < len(ids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"tasks not done after {DONE_TIMEOUT_S} s: {sorted(set(ids) - set(out))}")
        for i in ids:
            if i in out:
                continue
            status, reply = server.call("GET", f"/v1/tasks/{i}/result")
            if status == 200:
                out[i] = reply["choices"][0]["text"]
            elif status != 202:
                raise RuntimeError(f"/v1/tasks/{i}/result answered {status} {reply}")
        time.sleep(POLL_S)
    return out


def all_done(server, ids):
    return all(server.call("GET", f"/v1/tasks/{i}/result")[0] == 200 for i in ids)


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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--valet", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    rng = random.Random(args.seed)
    root = tempfile.mkdtemp(prefix="valet-soak-durable-")
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
    finally:
        for server in LIVE:
            server.kill()
        shutil.rmtree(root, ignore_errors=True)
    lost = sum(s is None for s in survived)
    mismatched = sum(s is not None and s != e for s, e in zip(survived, expected))
    total = sum(kills.values())
    print(json.dumps({"kills": total, "by_mode": kills, "tasks": TASKS, "lost": lost, "mismatched": mismatched,
                      "forgotten": forgotten}))
    return 0 if total >= args.kills and lost == 0 and mismatched == 0 and forgotten else 1


if __name__ == "__main__":
    sys.exit(main())
