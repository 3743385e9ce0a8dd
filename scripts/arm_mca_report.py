#!/usr/bin/env python3
"""The report of scripts/arm-mca.sh: each NEON int8 kernel's innermost loop,
taken from clang's assembly by its loop-header label, through llvm-mca for
each core, beside the SDOT/SMMLA issue rate of that core's scheduling model.

Usage: arm_mca_report.py LLVM_MCA CXXFILT ASM_DIR
Exits 1 when a kernel or its loop is missing from the assembly.
"""
import re
import subprocess
import sys
import tempfile

CORES = ["cortex-a76", "neoverse-n2", "neoverse-v2"]
# Parse every instruction whatever the core (A76 has no i8mm: its SMMLA
# figures are the model's, not the hardware's).
MATTR = "+dotprod,+i8mm"
MACS = {"sdot": 16, "smmla": 32}  # int8 multiply-adds per instruction
ITERATIONS = 200

# (label, assembly file, demangled function name prefix, what one loop iteration is)
KERNELS = [
    ("packed sdot Q4_0 8x4", "packed_neon.s",
     "void valet::neon::sdot::(anonymous namespace)::Entries::GemmSmallx8<valet::BlockQ4_0x8, 4>(", "block"),
    ("packed sdot Q8_0 8x4", "packed_neon.s",
     "void valet::neon::sdot::(anonymous namespace)::Entries::GemmSmallx8<valet::BlockQ8_0x8, 4>(", "block"),
    ("packed sdot Q4_0 8x1", "packed_neon.s",
     "void valet::neon::sdot::(anonymous namespace)::Entries::GemmSmallx8<valet::BlockQ4_0x8, 1>(", "block"),
    ("packed sdot Q4_K 8x4", "packed_neon.s",
     "void valet::neon::sdot::(anonymous namespace)::Entries::GemmQ4Q5_Kx8<valet::BlockQ4_Kx8, 4>(", "sub-block"),
    ("packed sdot Q6_K 8x4", "packed_neon.s",
     "void valet::neon::sdot::(anonymous namespace)::Entries::GemmQ3Q6_Kx8<valet::BlockQ6_Kx8, 4>(", "sub-block"),
    ("packed smmla Q4_0 8x4", "packed_i8mm.s",
     "void valet::neon::smmla::(anonymous namespace)::GemmPairs<valet::BlockQ4_0x8>(", "block"),
    ("packed smmla Q8_0 8x4", "packed_i8mm.s",
     "void valet::neon::smmla::(anonymous namespace)::GemmPairs<valet::BlockQ8_0x8>(", "block"),
    ("packed smmla Q4_K 8x4", "packed_i8mm.s",
     "void valet::neon::smmla::(anonymous namespace)::GemmSuperPairs<valet::BlockQ4_Kx8>(", "sub-block"),
    ("packed smmla Q6_K 8x4", "packed_i8mm.s",
     "void valet::neon::smmla::(anonymous namespace)::GemmSuperPairs<valet::BlockQ6_Kx8>(", "sub-block"),
    ("rows sdot Q8_0 4x2", "tiles_dotprod_i8mm.s",
     "void valet::neon::(anonymous namespace)::TileDotprod<valet::BlockQ8_0, "
     "&valet::neon::(anonymous namespace)::LoadQ8_0(valet::BlockQ8_0 const&), 4, 2>(", "block"),
    ("rows smmla Q8_0 4x4", "tiles_dotprod_i8mm.s",
     "void valet::neon::(anonymous namespace)::TileI8mm<valet::BlockQ8_0, "
     "&valet::neon::(anonymous namespace)::LoadQ8_0(valet::BlockQ8_0 const&), 2, 2>(", "block"),
]


def fail(message):
    print(f"arm-mca: {message}", file=sys.stderr)
    sys.exit(1)


def functions(path, cxxfilt):
    """{demangled name: its lines} of every function in an assembly file."""
    lines = open(path).read().split("\n")
    starts = [(i, m.group(1)) for i, line in enumerate(lines) if (m := re.match(r"^(_Z\w+):", line))]
    names = subprocess.run([cxxfilt], input="\n".join(n for _, n in starts), capture_output=True,
                           text=True, check=True).stdout.split("\n")
    bounds = [i for i, _ in starts] + [len(lines)]
    return {names[k]: lines[bounds[k]:bounds[k + 1]] for k in range(len(starts))}


def blocks(body):
    """The basic blocks of a function as (label, annotation, instructions).
    A block starts at a label (.LBBf_b: or // %bb.N:); clang writes its loop
    membership beside it, continued on comment-only lines."""
    out = []
    for line in body:
        label = re.match(r"^(\.LBB\w+):|^// (%bb\.\d+):", line)
        if label:
            out.append([label.group(1) or label.group(2), line, []])
        elif out and line.strip().startswith("//") and not out[-1][2]:
            out[-1][1] += line
        elif out:
            text = line.split("//")[0].strip()
            if text and not text.startswith("."):
                out[-1][2].append(text)
    return out


def innermost_loop(body):
    """The instructions of the deepest loop, in text order, and whether it has
    more than one block. Clang marks a loop's header "Loop Header: Depth=N"
    and its other blocks "Header=BB<f>_<b>"; llvm-mca reads them as one
    straight sequence, so both sides of a branch inside the loop count."""
    bbs = blocks(body)
    headers = [(int(m.group(1)), b[0]) for b in bbs if (m := re.search(r"Loop Header: Depth=(\d+)", b[1]))]
    if not headers:
        return None, False
    _, header = max(headers)
    tag = "Header=" + header.lstrip(".L")
    members = [b for b in bbs if b[0] == header or tag in b[1]]
    return [i for b in members for i in b[2]], len(members) > 1


def mca(tool, core, code):
    """llvm-mca's report of `code` on `core`'s scheduling model."""
    with tempfile.NamedTemporaryFile("w", suffix=".s") as f:
        f.write("\n".join(code) + "\n")
        f.flush()
        out = subprocess.run([tool, "-mtriple=aarch64", f"-mcpu={core}", f"-mattr={MATTR}",
                              f"-iterations={ITERATIONS}", f.name], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"llvm-mca failed on {core}: {out.stderr.strip()[:400]}")
    return out.stdout


def field(report, name):
    m = re.search(rf"{name}:\s+([\d.]+)", report)
    if not m:
        fail(f"llvm-mca printed no {name}")
    return float(m.group(1))


def issue_rate(tool, core, op):
    """Instructions per cycle of `op` from 12 independent chains: the
    model's steady state (Block RThroughput), not a ramp-up."""
    code = [f"{op} v{k}.4s, v30.16b, v31.16b" for k in range(12)]
    return 12 / field(mca(tool, core, code), "Block RThroughput")


def main():
    tool, cxxfilt, asm_dir = sys.argv[1:4]
    files = {}
    rates = {core: {op: issue_rate(tool, core, op) for op in MACS} for core in CORES}
    print("peak issue rate (scheduling model, instructions/cycle): " +
          "; ".join(f"{c} sdot {r['sdot']:.1f} smmla {r['smmla']:.1f}" for c, r in rates.items()))
    print("(Cortex-A76 has no i8mm: its SMMLA lines are the model's, not hardware's)")
    print("* the loop branches inside; llvm-mca counts both sides, so its cycles are an upper bound")
    print(f"{'kernel':<22} {'core':<12} {'cyc/iter':>8} {'dots':>5} {'bound':>6} {'of peak':>7}  per")
    for label, asm, prefix, unit in KERNELS:
        if asm not in files:
            files[asm] = functions(f"{asm_dir}/{asm}", cxxfilt)
        body = next((b for name, b in files[asm].items() if name.startswith(prefix)), None)
        if body is None:
            fail(f"{label}: no function {prefix}... in {asm}")
        code, branchy = innermost_loop(body)
        if not code:
            fail(f"{label}: no inner loop found in {prefix}...")
        for core in CORES:
            cycles = field(mca(tool, core, code), "Total Cycles") / ITERATIONS
            counts = {op: sum(1 for c in code if c.split()[0] == op) for op in MACS}
            op = max(counts, key=counts.get)
            if counts[op] == 0:
                fail(f"{label}: its inner loop has no SDOT or SMMLA")
            bound = counts[op] / rates[core][op]
            print(f"{label:<22} {core:<12} {cycles:8.2f} {counts[op]:5d} {bound:6.2f} {100 * bound / cycles:6.0f}%  {unit}{' *' if branchy else ''}")


if __name__ == "__main__":
    main()
