#!/usr/bin/env python3
"""Kill soak of the weights cache's creation (docs/engine.md, "Packed weights
as a file"): `valet pack` is SIGKILLed again and again while it packs or
writes the cache, into a directory that holds nothing, a stale temporary
file, or a damaged cache (truncated, or a byte of its header or tensor index
flipped). After every kill the directory may hold a cache only if it is
byte for byte the one an uninterrupted `valet pack` makes; the next pack must
either accept exactly that file or make it anew, and leave no temporary file.
At the end a generation that maps the cache must print what one without it
prints.

usage: soak-weights-cache.py --valet build/tools/valet [--kills 40] [--seed 1]
Makes its own quantized model (the bench preset, Q4_0, 57 MB) in a scratch
directory. Exit status 0 when there were --kills kills, at least a quarter
of them while the cache was being written, and no check failed; the summary
is one JSON line.
"""
import argparse, filecmp, json, os, random, shutil, signal, subprocess, sys, tempfile, time

PROMPT = "The weights on the disk were"


def pack(valet, model, out, progress=False):
    argv = [valet, "pack", "-m", model, "-o", out] + (["--progress"] if progress else [])
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished_pack(valet, model, out):
    """Runs an uninterrupted pack: its output line and the seconds it took to write."""
    t0 = time.monotonic()
    p = pack(valet, model, out, progress=True)
    write_at = None
    for line in p.stderr:
        if line.startswith("write "):
            write_at = time.monotonic()
    stdout = p.stdout.read()
    if p.wait() != 0:
        sys.exit(f"soak-weights-cache: valet pack failed: {stdout}")
    end = time.monotonic()
    return stdout.strip(), end - t0, (end - write_at) if write_at is not None else 0.0


def header_bytes(path):
    """The length of a cache's header and tensor index (model/weights_cache.h), checksum included."""
    with open(path, "rb") as f:
        head = f.read(1 << 20)
    at = 16  # magic, file format, pack format
    for _ in range(2):  # valet version, model fingerprint
        at += 4 + int.from_bytes(head[at:at + 4], "little")
    entries = int.from_bytes(head[at:at + 8], "little")
    return at + 8 + entries * 48 + 24


def damage(path, rng):
    """Truncates the cache or flips one bit of its header and tensor index (the
    padding up to the data and the data itself are not checked: docs/engine.md)."""
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        if rng.random() < 0.3:
            f.truncate(rng.randrange(size))
            return "truncated"
        at = rng.randrange(header_bytes(path))
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ (1 << rng.randrange(8))]))
        return "flipped"


def generate(valet, model, cache=None):
    """The greedy continuation of PROMPT; mapping the cache at `cache`, or packing in memory."""
    argv = [valet, "generate", "-m", model, "-p", PROMPT, "-n", "16", "--temp", "0"]
    out = subprocess.run(argv + (["--weights-cache", cache] if cache else []), capture_output=True)
    if out.returncode != 0:
        sys.exit(f"soak-weights-cache: generate failed: {out.stderr.decode(errors='replace')}")
    return out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--valet", required=True)
    ap.add_argument("--kills", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    scratch = tempfile.mkdtemp(prefix="valet-soak-weights-")
    try:
        model = os.path.join(scratch, "model.gguf")
        subprocess.run([args.valet, "synth-model", "--preset", "bench", "--type", "q4_0", "-o", model],
                       check=True, stdout=subprocess.DEVNULL)
        reference_dir = os.path.join(scratch, "reference") + "/"
        line, total_s, write_s = finished_pack(args.valet, model, reference_dir)
        names = os.listdir(reference_dir)
        if "written" not in line or len(names) != 1:
            sys.exit(f"soak-weights-cache: the active kernels made no cache ({line}): nothing to soak")
        name = names[0]
        reference = os.path.join(reference_dir, name)
        caches = os.path.join(scratch, "caches") + "/"
        cache = os.path.join(caches, name)
        counts = {"kills": 0, "in_write": 0, "accepted": 0, "rebuilt": 0, "damaged": 0, "failures": []}

        def fail(what):
            counts["failures"].append(what)

        while counts["kills"] < args.kills:
            # What the killed pack finds: nothing, a whole cache damaged, or last round's leftovers.
            start = rng.choice(["fresh", "damaged", "leftover"])
            if start == "fresh":
                shutil.rmtree(caches, ignore_errors=True)
            elif start == "damaged":
                os.makedirs(caches, exist_ok=True)
                shutil.copyfile(reference, cache)
                damage(cache, rng)
                counts["damaged"] += 1
            p = pack(args.valet, model, caches, progress=True)
            # Half the kills in the cache's write, the rest anywhere in the run.
            if rng.random() < 0.5:
                for progress_line in p.stderr:
                    if progress_line.startswith("write "):
                        break
                time.sleep(rng.uniform(0, write_s))
                counts["in_write"] += 1
            else:
                time.sleep(rng.uniform(0, total_s))
            p.send_signal(signal.SIGKILL)
            p.communicate()
            counts["kills"] += 1
            if os.path.exists(cache) and filecmp.cmp(cache, reference, shallow=False):
                expect = "already packed"
            else:
                expect = "packed and written"
            after = pack(args.valet, model, caches)
            out, err = after.communicate()
            if after.returncode != 0:
                fail(f"kill {counts['kills']}: pack after the kill failed: {err.strip()}")
            elif expect not in out:
                fail(f"kill {counts['kills']} ({start}): expected '{expect}', got '{out.strip()}'")
            counts["accepted" if expect == "already packed" else "rebuilt"] += 1
            if not filecmp.cmp(cache, reference, shallow=False):
                fail(f"kill {counts['kills']} ({start}): the cache differs from the reference")
            if sorted(os.listdir(caches)) != [name]:
                fail(f"kill {counts['kills']} ({start}): left {sorted(os.listdir(caches))}")

        without = generate(args.valet, model)
        mapped = generate(args.valet, model, caches)
        if mapped != without:
            fail(f"a generation with the cache printed {mapped!r}, without it {without!r}")
        if counts["in_write"] * 4 < counts["kills"]:
            fail(f"only {counts['in_write']} of {counts['kills']} kills were in the write")
        print(json.dumps(counts))
        return 1 if counts["failures"] else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
