"""Compile every shipped kernel configuration for sm_90 (Hopper) without a GPU, and read
what the compiler made: resources from ptxas, and the KV loop from the SASS.

  python -m kernels.compile_report                  (from the repository root; a few minutes on 2 cores)
  python -m kernels.compile_report --only planned   (one version and the combine kernel)
  python -m kernels.compile_report --only sparse    (the sparse decode kernel: top-k 2048, FP8 rows)
  python -m kernels.compile_report --only prefill_causal   (a prefill version; --only prefix_chunks: the
                                                    chunked prefix context's kernels, kernels/prefill_context.py)
  python -m kernels.compile_report --json           (machine-readable rows)
  python -m kernels.compile_report --excerpt gluon  (one configuration's MMA layouts and SASS loop, JSON)

The configurations come from the version table (kernels.mla_decode.VERSION_TABLE): for each
version, each cache format it reads and each BLOCK_M it ships (its row), its launcher is asked
for its launches on a representative call with gpu=True (`--only NAME`: one version), and
each launch is compiled with the specialization triton's launcher would give it (16-byte
aligned pointers, integers divisible by 16, integers equal to 1 as constants).

Per configuration: shared memory (triton's metadata), registers and spill bytes (ptxas -v),
and from the SASS (cuobjdump, shipped in the triton wheel) of the innermost loop that holds
the matrix instructions -- the KV loop, one tile per iteration:
  executed MMA FLOP   every HGMMA/HMMA in the loop, times the warpgroups (or warps) that run it
  useful MMA FLOP     2 * BLOCK_M * BLOCK_N * (576 + 512): QK^T plus PV for one tile
  instructions        SASS instructions in the loop body (static count, branches included)
  overlap             whether a copy of a later tile is still in flight at every MMA: the loop
                      is replayed with a count of outstanding copy groups (LDGSTS+LDGDEPBAR
                      commit one, DEPBAR.LE SB0,N leaves at most N; UTMALDG adds one, an
                      mbarrier wait retires one)
Must run without TRITON_INTERPRET (the interpreter cannot compile); tests run it in a subprocess."""
from __future__ import annotations

import collections
import contextlib
import io
import json
import os
import re
import sys
import time
from typing import NamedTuple

SMEM_LIMIT_SM90 = 232_448  # bytes of shared memory one block may use on H100/H200 (227 KiB)
# (s_q, h_q) of an example call whose default tile has this BLOCK_M (kernels.launch.default_block_m);
# h_q=64 and 128 share the 64-row tile; BLOCK_M 1 = one row per program, any shape builds the same kernel
SHAPE_OF_BLOCK_M = {1: (1, 16), 16: (1, 16), 32: (1, 32), 64: (1, 128)}
TOPK = 2048  # a sparse call's example: DeepSeek-V3.2's top-k


class Config(NamedTuple):
    label: str  # "tiled bf16 BLOCK_M=16", "combine", ...
    launch: object  # a kernels.launch.Launch, or None where it could not be built
    version: str | None  # its row of VERSION_TABLE (None: the combine kernel, shared)


def _example_launches(version, cache: str, s_q: int, h_q: int) -> list:
    """The launches a GPU call of this version ships, built on small CPU tensors shaped like a
    real call (the compile needs types and alignment only; nothing runs)."""
    import torch

    from . import mla_decode as md
    from . import sparse_decode
    from .dims import D_K, FP8_ROW_BYTES
    fp8 = cache == "fp8"
    q = torch.zeros(2, s_q, h_q, D_K, dtype=torch.bfloat16)
    kv = torch.zeros(4, 64, 1, FP8_ROW_BYTES if fp8 else D_K, dtype=torch.uint8 if fp8 else torch.bfloat16)
    if version.call == "sparse":
        idx = torch.zeros(2, s_q, TOPK, dtype=torch.int32)
        return sparse_decode.prepare(q, kv, idx, gpu=True, check_indices=False)[0]
    bt = torch.zeros(2, 4, dtype=torch.int32)
    sl = torch.tensor([200, 130], dtype=torch.int32)
    return md.prepare(q, kv, bt, sl, 512, causal=True, is_fp8_kvcache=fp8, gpu=True, version=version.name)[1]


def shipped_configs(only=None) -> list[Config]:
    """Every configuration a GPU launch ships, from the version table: each version, each cache
    it reads, each BLOCK_M it ships (its row of VERSION_TABLE); the combine kernel once."""
    from . import mla_decode as md

    out, seen = [], set()
    for name, version in md.VERSION_TABLE.items():
        if only and name != only:
            continue
        for cache in version.caches:
            for block_m in version.block_m:
                try:
                    launches = _example_launches(version, cache, *SHAPE_OF_BLOCK_M[block_m])
                except ImportError as e:  # no Gluon in this triton
                    out.append(Config(f"{name}: not compiled ({e})", None, name))
                    break
                except (ValueError, TypeError) as e:  # its launcher refuses what its row says it reads: a row
                    out.append(Config(f"{name} {cache}: not built ({type(e).__name__}: {e})", None, name))
                    break
                for launch in launches:
                    kernel, *tile = launch.label.split()
                    label = "combine" if kernel == "combine" else " ".join([kernel, cache] + tile)
                    if label not in seen:
                        seen.add(label)
                        out.append(Config(label, launch, None if kernel == "combine" else name))
    from .prefill_context import compile_configs as prefill_configs  # chapter 9's kernels: PREFILL_TABLE's rows
    for label, launch, _ in prefill_configs(only):  # and the chunked prefix context's (kernels/prefill_context.py)
        if label not in seen:
            seen.add(label)
            out.append(Config(label, launch, None))
    return out


def specialize(launch):
    """(signature, constexprs, attrs) as triton's launcher would specialize this launch."""
    from triton.backends.compiler import BaseBackend
    from triton.runtime.jit import native_specialize_impl

    fn = launch.kernel
    sig, constexprs, attrs = {}, dict(launch.constexprs), {}
    for i, name in enumerate(fn.arg_names):
        if name in launch.constexprs:
            sig[name] = "constexpr"
            continue
        value = launch.args[name]
        ty, key = native_specialize_impl(BaseBackend, value, False, True, True)
        if ty == "constexpr":
            sig[name] = "constexpr"
            constexprs[name] = key
            continue
        sig[name] = ty
        if key == "D":
            attrs[(i,)] = [["tt.divisibility", 16]]
    return sig, constexprs, attrs


def compile_launch(launch, fresh=True):
    """Compile one launch for sm_90; returns (compiled kernel, ptxas log). fresh=False lets
    triton's on-disk cache answer (no ptxas log then): the chapter's excerpt uses it."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig, constexprs, attrs = specialize(launch)
    source = ASTSource
    if type(launch.kernel).__name__.startswith("Gluon"):
        from triton.experimental.gluon._runtime import GluonASTSource as source
    src = source(fn=launch.kernel, signature=sig, constexprs=constexprs, attrs=attrs)
    triton.knobs.nvidia.dump_ptxas_log = fresh  # ptxas -v's resource report, printed by triton
    triton.knobs.compilation.always_compile = fresh  # a cached kernel would skip ptxas and its report
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": launch.num_warps, "num_stages": launch.num_stages})
    return k, log.getvalue()


def sass_of(kernel):
    """SASS text of a compiled kernel (cuobjdump from the triton wheel), or None."""
    try:
        from triton.tools.disasm import get_sass
        return get_sass(kernel.asm["cubin"])
    except Exception:  # noqa: BLE001 -- no cuobjdump: the PTX analysis still runs
        return None


# ---------------------------------------------------------------------------------------
# Reading the loop
# ---------------------------------------------------------------------------------------

SASS = dict(
    label=re.compile(r"^\s*(\.?L\w+|LBB\d+):\s*$"),
    branch=re.compile(r"\bBRA\s+`?\(?(\.?L\w+|LBB\d+)"),
    mma=re.compile(r"\b(HGMMA)\.(\d+)x(\d+)x(\d+)|\b(HMMA)\.(16816|1688|884)"),
    copy=re.compile(r"\bLDGSTS\b"),
    commit=re.compile(r"\bLDGDEPBAR\b"),
    wait=re.compile(r"\bDEPBAR\.LE\s+SB0,\s*(0x[0-9a-f]+|\d+)"),
    tma=re.compile(r"\bUTMALDG\b|\bUBLKCP\b"),
    mbar_wait=re.compile(r"\bSYNCS\.PHASECHK"),
    mbar_expect=re.compile(r"\bSYNCS\.ARRIVE"),
    sync_load=re.compile(r"\bLDG\.E\b"),
    local=re.compile(r"\b(LDL|STL)\b"),
)
PTX = dict(
    label=re.compile(r"^\s*(\$L__\w+):"),
    branch=re.compile(r"\bbra(?:\.uni)?\s+(\$L__\w+)"),
    mma=re.compile(r"\b(wgmma)\.mma_async\.\w+\.\w+\.m(\d+)n(\d+)k(\d+)|\b(mma)\.sync\.aligned\.(m16n8k16|m16n8k8)"),
    copy=re.compile(r"\bcp\.async\.(?:ca|cg)\.shared"),
    commit=re.compile(r"\bcp\.async\.commit_group"),
    wait=re.compile(r"\bcp\.async\.wait_group\s+(\d+)"),
    tma=re.compile(r"\bcp\.async\.bulk\.tensor"),
    mbar_wait=re.compile(r"\bmbarrier\.try_wait"),
    mbar_expect=re.compile(r"\bmbarrier\.arrive\.expect_tx|\bmbarrier\.expect_tx"),
    sync_load=re.compile(r"\bld\.global\b"),
    local=re.compile(r"\b(ld|st)\.local\b"),
)
_HMMA_SHAPES = {"16816": (16, 8, 16), "1688": (16, 8, 8), "884": (8, 8, 4),
                "m16n8k16": (16, 8, 16), "m16n8k8": (16, 8, 8)}


def _lines(text, d):
    """Instruction lines and label positions of one kernel's SASS or PTX."""
    ins, labels = [], {}
    for raw in text.splitlines():
        line = raw.split("//")[0].strip()
        if not line:
            continue
        m = d["label"].match(line)
        if m:
            labels[m.group(1)] = len(ins)
            continue
        if line.startswith((".", "{", "}", "Function:")) and not d["mma"].search(line):
            continue
        ins.append(line)
    return ins, labels


def kv_loop(text, d):
    """The innermost backward-branch loop that holds MMA instructions:
    (instructions before it, its body) or None."""
    ins, labels = _lines(text, d)
    loops = []
    for j, line in enumerate(ins):
        m = d["branch"].search(line)
        if m and m.group(1) in labels and labels[m.group(1)] <= j:
            start = labels[m.group(1)]
            body = ins[start:j + 1]
            if any(d["mma"].search(x) for x in body):
                loops.append((ins[:start], body))
    return min(loops, key=lambda pb: len(pb[1])) if loops else None


def mma_flop(line, d, num_warps):
    """Executed FLOP of one MMA instruction: wgmma runs once per warpgroup, mma.sync per warp."""
    m = d["mma"].search(line)
    if not m:
        return 0
    if m.group(1):  # HGMMA / wgmma: M x N x K per warpgroup
        mm, n, k = int(m.group(2)), int(m.group(3)), int(m.group(4))
        return 2 * mm * n * k * max(1, num_warps // 4)
    mm, n, k = _HMMA_SHAPES[m.group(6)]
    return 2 * mm * n * k * num_warps


def overlap(prologue, body, d, passes=3):
    """Copy groups in flight at the MMAs of the loop's steady state: the instructions before
    the loop run once (in program order, predicates ignored), then the body `passes` times.
    cp.async: LDGSTS...LDGDEPBAR commits a group, DEPBAR.LE SB0,N leaves at most N.
    TMA: the copies after one mbarrier expect are one group (one tile), an mbarrier wait
    (SYNCS.PHASECHK) retires the oldest. Returns the fewest groups in flight at any MMA of the last pass."""
    state = dict(in_flight=0, pending=False, tma_open=False)
    fewest = None

    def step(line, record):
        nonlocal fewest
        if d["copy"].search(line):
            state["pending"] = True
        elif d["commit"].search(line):
            if state["pending"]:
                state["in_flight"] += 1
                state["pending"] = False
        elif d["wait"].search(line):
            state["in_flight"] = min(state["in_flight"], int(d["wait"].search(line).group(1), 0))
        elif d["tma"].search(line):
            if not state["tma_open"]:
                state["in_flight"] += 1
                state["tma_open"] = True
            return
        elif d["mbar_wait"].search(line):
            state["in_flight"] = max(0, state["in_flight"] - 1)
        elif d["mma"].search(line) and record:
            fewest = state["in_flight"] if fewest is None else min(fewest, state["in_flight"])
        if d["mbar_wait"].search(line) or d["mma"].search(line) or d["mbar_expect"].search(line) \
                or d["branch"].search(line):
            state["tma_open"] = False  # the next TMA copy starts another tile

    for line in prologue:
        step(line, False)
    for p in range(passes):
        for line in body:
            step(line, p == passes - 1)
    return fewest


def _mma_shapes(lines, d):
    return collections.Counter(m.group(0) for x in lines for m in [d["mma"].search(x)] if m)


def partition_loops(text, d):
    """The KV loops of a warp-specialized kernel (version 6): each partition runs its own loop,
    and mbarrier waits add small backward-branch loops everywhere, so "the innermost loop with
    an MMA" is no longer the KV loop. Here: the loops that hold every MMA shape of the kernel
    and contain no other such loop. Returns (prologue, body) pairs."""
    ins, labels = _lines(text, d)
    every = set(_mma_shapes(ins, d))
    loops = []
    for j, line in enumerate(ins):
        m = d["branch"].search(line)
        if m and m.group(1) in labels and labels[m.group(1)] <= j:
            start = labels[m.group(1)]
            shapes = _mma_shapes(ins[start:j + 1], d)
            if every and set(shapes) == every:
                loops.append((start, j, shapes))
    minimal = [(a, b, c) for a, b, c in loops
               if not any((a2, b2) != (a, b) and a <= a2 and b2 <= b for a2, b2, _ in loops)]
    return [(ins[:a], ins[a:b + 1]) for a, b, _ in minimal]


def analyse_partitions(text, num_warps_per_partition, block_m, block_n):
    """Version 6's loops (SASS): each partition's loop does one tile's worth of a pair, so
    executed/useful = (MMA FLOP of the loops found) / (loops found x useful FLOP of a tile).
    The copies-in-flight replay assumes that every mbarrier wait retires a copy, which is
    false when partitions also wait on each other: it is not run here (None)."""
    d = SASS
    loops = partition_loops(text, d)
    if not loops:
        return dict(loop=None)
    from .dims import D_K, D_V
    useful = 2 * block_m * block_n * (D_K + D_V)
    executed = [sum(mma_flop(x, d, num_warps_per_partition) for x in body) for _, body in loops]
    ratio = sum(executed) / (len(loops) * useful)
    bodies = [body for _, body in loops]
    return dict(loop="sass", kv_loops=len(loops), instructions=max(len(b) for b in bodies),
                mma=sum(bool(d["mma"].search(x)) for b in bodies for x in b) // len(loops),
                mma_shapes=sorted({s for b in bodies for s in _mma_shapes(b, d)}), executed=sum(executed) / len(loops),
                useful=useful, ratio=round(ratio, 3),
                async_copies=sum(bool(d["tma"].search(x)) for b in bodies for x in b),
                sync_loads=sum(bool(d["sync_load"].search(x)) for b in bodies for x in b),
                local_ops=sum(bool(d["local"].search(x)) for b in bodies for x in b),
                in_flight_at_mma=None, overlap=None)


def analyse_loop(text, dialect, num_warps, block_m, block_n):
    d = SASS if dialect == "sass" else PTX
    found = kv_loop(text, d)
    if found is None:
        return dict(loop=None)
    prologue, body = found
    executed = sum(mma_flop(x, d, num_warps) for x in body)
    from .dims import D_K, D_V
    useful = 2 * block_m * block_n * (D_K + D_V) if block_m and block_n else None  # QK^T + PV
    shapes = sorted({m.group(0) for x in body for m in [d["mma"].search(x)] if m})
    async_copies = sum(bool(d["copy"].search(x) or d["tma"].search(x)) for x in body)
    in_flight = overlap(prologue, body, d) if async_copies else None
    return dict(loop=dialect, instructions=len(body), mma=sum(bool(d["mma"].search(x)) for x in body),
                mma_shapes=shapes, executed=executed, useful=useful,
                ratio=round(executed / useful, 3) if useful else None,
                async_copies=async_copies, sync_loads=sum(bool(d["sync_load"].search(x)) for x in body),
                local_ops=sum(bool(d["local"].search(x)) for x in body),
                in_flight_at_mma=in_flight, overlap=None if in_flight is None else in_flight >= 1)


def report_one(label, launch):
    t = time.time()
    k, log = compile_launch(launch)
    regs = re.findall(r"Used (\d+) registers", log)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    bm, bn = launch.block_shape
    row = dict(label=label, block_m=bm, block_n=bn, num_warps=launch.num_warps, num_stages=launch.num_stages,
               shared=int(k.metadata.shared), regs=int(regs[-1]) if regs else None,
               spill_stores=int(spills[-1][0]) if spills else None,
               spill_loads=int(spills[-1][1]) if spills else None,
               wgmma="wgmma" in k.asm.get("ptx", ""))
    sass = sass_of(k)
    if sass and "USETMAXREG" in sass:  # warp-specialized: one KV loop per partition (version 6)
        loop = analyse_partitions(sass, launch.num_warps, bm, bn)
    else:
        loop = analyse_loop(sass, "sass", launch.num_warps, bm, bn) if sass else dict(loop=None)
    if loop.get("loop") is None:  # no SASS (or no MMA loop in it): read the PTX
        loop = analyse_loop(k.asm["ptx"], "ptx", launch.num_warps, bm, bn)
    row.update(loop)
    workers = re.findall(r"^\s*partition\d+\(.*\)\s*num_warps\((\d+)\)", k.asm.get("ttgir", ""), flags=re.M)
    if workers:  # warp-specialized: the launch's warps run the default partition, these the workers
        row["worker_warps"] = [int(x) for x in workers]
    row["seconds"] = round(time.time() - t, 1)
    return row


_EXCERPT = re.compile(r"DEPBAR|HGMMA|HMMA|LDGSTS|LDGDEPBAR|UTMALDG|SYNCS\.PHASECHK|BRA")


def loop_excerpt(body, limit=14):
    """The KV loop's memory, wait and MMA instructions in program order, runs of the same
    opcode folded into one line with a count."""
    picked = [x.split("\t")[-1].rstrip(" ;") for x in body if _EXCERPT.search(x)]
    out = []
    for x in picked:
        op = x.split()[0] if not x.startswith("@") else x.split()[1]
        if out and out[-1][0] == op:
            out[-1][2] += 1
        else:
            out.append([op, x, 1])
    return [f"{x}" + (f"    ... x{n}" if n > 1 else "") for _, x, n in out][:limit]


def excerpt(version="planned", h_q=128):
    """What the compiler made of one shipped configuration (bf16, s_q=1): the MMA layouts of
    its TTGIR, its KV loop in SASS (folded), and the loop analysis."""
    from . import mla_decode as md

    launch = _example_launches(md.VERSION_TABLE[version], "bf16", 1, h_q)[0]
    k, _ = compile_launch(launch, fresh=False)
    ttgir = [ln.strip() for ln in k.asm["ttgir"].splitlines() if re.match(r"\s*#mma\d* = ", ln)]
    sass = sass_of(k)
    found = kv_loop(sass, SASS) if sass else None
    bm, bn = launch.block_shape
    return dict(label=launch.label, num_warps=launch.num_warps, ttgir_mma_layouts=ttgir,
                sass_loop=loop_excerpt(found[1]) if found else [],
                analysis=analyse_loop(sass, "sass", launch.num_warps, bm, bn) if sass else None)


def _report_index(args):
    i, only = args
    label, launch, version = shipped_configs(only)[i]
    row = dict(label=label, error="not compiled") if launch is None else None
    if row is None:
        try:
            row = report_one(label, launch)
        except Exception as e:  # noqa: BLE001 -- one failed compile is a row, not a crash
            row = dict(label=label, error=f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}")
    from .mla_prefill import dot_widths
    widths = dot_widths(launch) if launch is not None and row.get("executed") else None
    if widths:  # a prefill attention kernel: useful MMA FLOP per tile 2 * BLOCK_M * BLOCK_N * (192 + 128)
        bm, bn = launch.block_shape
        row.update(useful=2 * bm * bn * sum(widths), ratio=round(row["executed"] / (2 * bm * bn * sum(widths)), 3))
    if version is not None:
        from . import mla_decode as md
        row.update(version=version, tiles=list(md.VERSION_TABLE[version].block_m))
    return row


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    as_json = "--json" in argv
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else (os.cpu_count() or 1)
    if os.environ.get("TRITON_INTERPRET") == "1":
        sys.exit("compile_report: unset TRITON_INTERPRET (the interpreter cannot compile for a GPU)")
    if "--excerpt" in argv:  # e.g. --excerpt planned: one configuration's TTGIR layouts and SASS loop, as JSON
        row = excerpt(argv[argv.index("--excerpt") + 1])
        print(json.dumps(row))
        return row
    n = len(shipped_configs(only))
    work = [(i, only) for i in range(n)]
    if jobs > 1 and n > 1:
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(min(jobs, n)) as pool:
            rows = pool.map(_report_index, work)
    else:
        rows = [_report_index(w) for w in work]
    import triton
    for r in rows:
        r["triton"] = triton.__version__
    print(json.dumps(rows) if as_json else format_table(rows))
    return rows


def format_table(rows):
    lines = ["| kernel | BLOCK_M x N | warps | stages | shared (B) | regs | spills st/ld (B) | MMA in KV loop "
             "| executed/useful MMA | instr/tile | copies in flight at MMA | overlap |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['label']} | {r['error']} |" + " |" * 10)
            continue
        shapes = ", ".join(f"{r['mma']}x" if i == 0 else "" for i in range(1)) if r.get("mma") else "-"
        if r.get("mma_shapes"):
            shapes = f"{r['mma']}: " + ", ".join(s.split(".")[0] + "." + ".".join(s.split(".")[1:2]) if "." in s else s
                                                   for s in r["mma_shapes"])
        ratio = f"{r['ratio']:.2f}" if r.get("ratio") else "-"
        ov = "-" if r.get("overlap") is None else ("yes" if r["overlap"] else "no")
        inflight = "-" if r.get("in_flight_at_mma") is None else str(r["in_flight_at_mma"])
        warps = "+".join(str(w) for w in [r["num_warps"]] + r.get("worker_warps", []))
        lines.append(f"| {r['label']} | {r['block_m'] or '-'} x {r['block_n'] or '-'} | {warps} "
                     f"| {r['num_stages']} | {r['shared']} | {r['regs']} | {r['spill_stores']}/{r['spill_loads']} "
                     f"| {shapes} | {ratio} | {r.get('instructions', '-')} | {inflight} | {ov} |")
        if r.get("tiles") == [64] and r.get("ratio"):  # a version that ships 64-row tiles only (wgmma)
            lines.append(sixteen_row_line(r))
    return "\n".join(lines)


def sixteen_row_line(r):
    """The same compiled kernel at h_q * s_q = 16 (derived, not another compile): a wgmma is
    m64, so 64 rows are computed for 16 real ones -- 4x the useful MMA work. The 16-row path
    the compiler does build is version 4's BLOCK_M=16 tile (mma.sync, executed/useful 1.00)."""
    return (f"| {r['label']}, at h_q*s_q=16 (derived) | 16 real of 64 rows | | | | | | "
            f"| {r['ratio'] * r['block_m'] / 16:.2f} | | | |")


if __name__ == "__main__":
    main()
