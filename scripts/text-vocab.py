#!/usr/bin/env python3
"""text-vocab.py SRC DST: DST is a copy of the GGUF model SRC whose byte tokens
<0x80>..<0xFF> are typed NORMAL instead of BYTE (6 -> 1 in
tokenizer.ggml.token_type, an int32 array rewritten in place). A random-weight
model samples any token, and those byte tokens alone are not valid UTF-8;
llama-server (../shared/peer) aborts such answers with a 500, so the
benchmarks that talk to it over HTTP give both servers this copy, whose high
bytes print as text.
"""
import mmap, os, shutil, struct, sys
src, dst = sys.argv[1], sys.argv[2]
SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
STRING, ARRAY, INT32, NORMAL, BYTE = 8, 9, 5, 1, 6
with open(src, "rb") as f:
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
if m[:4] != b"GGUF":
    sys.exit(f"{src}: not a GGUF file")
pos = 8
def take(fmt):
    global pos
    (v,) = struct.unpack_from("<" + fmt, m, pos)
    pos += struct.calcsize("<" + fmt)
    return v
def string():
    global pos
    n = take("Q")
    pos += n
    return m[pos - n:pos]
def skip(t):
    global pos
    if t == STRING:
        string()
    elif t == ARRAY:
        et, n = take("I"), take("Q")
        if et in SIZES:
            pos += SIZES[et] * n
        else:
            for _ in range(n):
                skip(et)
    else:
        pos += SIZES[t]
take("Q")  # tensors
tokens, types_at = None, None
for _ in range(take("Q")):
    key, t = string(), take("I")
    if key == b"tokenizer.ggml.tokens" and t == ARRAY and take("I") == STRING:
        tokens = [string() for _ in range(take("Q"))]
    elif key == b"tokenizer.ggml.token_type" and t == ARRAY and take("I") == INT32:
        n = take("Q")
        types_at = pos
        pos += 4 * n
    else:
        skip(t)
if tokens is None or types_at is None:
    sys.exit(f"{src}: no tokenizer.ggml.tokens / int32 token_type")
high = [i for i, tok in enumerate(tokens)
        if struct.unpack_from("<i", m, types_at + 4 * i)[0] == BYTE and len(tok) == 6
        and tok.startswith(b"<0x") and int(tok[3:5], 16) >= 0x80]
shutil.copyfile(src, dst + ".tmp")
with open(dst + ".tmp", "r+b") as f:
    for i in high:
        f.seek(types_at + 4 * i)
        f.write(struct.pack("<i", NORMAL))
os.replace(dst + ".tmp", dst)
print(f"{os.path.basename(dst)}: {len(high)} byte tokens 0x80-0xFF typed NORMAL", file=sys.stderr)
