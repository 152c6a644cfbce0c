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
and from the whole SASS (nvdisasm, shipped in the triton wheel: every instruction, with the
source line each came from) of the innermost loop that holds the matrix instructions -- the
KV loop, one tile per iteration:
  executed MMA FLOP   every HGMMA/HMMA in the loop, times the warpgroups (or warps) that run it
  useful MMA FLOP     2 * BLOCK_M * BLOCK_N * (576 + 512): QK^T plus PV for one tile
  instructions        SASS instructions in the loop body (static count, branches included)
  overlap             whether a copy of a later tile is still in flight at every MMA: the loop
                      is replayed with a count of outstanding copy groups (LDGSTS+LDGDEPBAR
                      commit one, DEPBAR.LE SB0,N leaves at most N; UTMALDG adds one, an
                      mbarrier wait retires one)
A warp-specialized kernel (version 6) is read per partition: each instruction belongs to the
partition whose function its source line (and, under triton 3.9, its inlining chain) names,
and each partition's KV loop is the smallest loop of its own instructions that holds every MMA
shape it uses; per partition the report gives its setmaxnreg, the registers its code names,
its loop's instructions and its loop's spill loads and stores (LDL/STL), and the kernel's
starting cap (.maxnreg) and whether ptxas honoured it.

Why not triton's own reader (triton.tools.disasm): in triton 3.6 it matches instruction
addresses of exactly four hex digits, so it stops at address 0xfff0 -- after 4,096
instructions; version 6 has over 6,000, and its second partition's loop lay past that
point (triton 3.9 fixed the pattern). The reader here takes any address width.
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
        k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=launch.compile_options())
    return k, log.getvalue()


# ---------------------------------------------------------------------------------------
# The whole SASS
# ---------------------------------------------------------------------------------------

class Instr(NamedTuple):
    """One SASS instruction: its address, its text ("HGMMA.64x64x16.F32.BF16 R152, gdesc[UR44], ..."
    without address and ';'), and where it came from -- (file, line) pairs, innermost first
    (the inlining chain under triton 3.9; one pair, or none, under 3.6)."""
    addr: int
    text: str
    locs: tuple


_SASS_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")  # any address width (triton 3.6's: exactly 4)
_SASS_LABEL = re.compile(r"^\s*(\.L_x_\w+):")
_SASS_LOC = re.compile(r'File "([^"]+)", line (\d+)')


def _nvidia_tool(name: str) -> str | None:
    """A CUDA binary tool: the one in this triton's wheel, else the PATH's."""
    import shutil

    import triton
    path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)
    return path if os.path.exists(path) else shutil.which(name)


def disassemble(cubin: bytes) -> tuple[list[Instr], dict[str, int]]:
    """(every SASS instruction of a one-kernel cubin, branch label -> address). nvdisasm -gi
    prints each instruction's source line with its inlining chain; cuobjdump -sass (no source
    lines) where there is no nvdisasm."""
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        nvdisasm = _nvidia_tool("nvdisasm")
        cmd = [nvdisasm, "-c", "-gi", f.name] if nvdisasm else [_nvidia_tool("cuobjdump"), "-sass", f.name]
        return parse_disassembly(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def parse_disassembly(text: str) -> tuple[list[Instr], dict[str, int]]:
    """nvdisasm's (or cuobjdump's) listing -> (instructions, label -> address). A block of
    `//## File "...", line N [inlined at "...", line M ...]` lines gives the source of the
    instructions after it, until the next block; cuobjdump's encoding lines are skipped."""
    instrs, labels, pending, locs, fresh = [], {}, [], (), False
    for raw in text.splitlines():
        if raw.lstrip().startswith("//##"):  # a block of source positions: innermost first
            if not fresh:
                locs, fresh = (), True
            locs += tuple((f, int(n)) for f, n in _SASS_LOC.findall(raw) if (f, int(n)) not in locs)
            continue
        m = _SASS_LABEL.match(raw)
        if m:
            pending.append(m.group(1))
            continue
        m = _SASS_LINE.match(raw)
        if m:
            addr = int(m.group(1), 16)
            labels.update({name: addr for name in pending})
            pending, fresh = [], False
            text = m.group(2)
            to = re.search(r"\bBRA(?:\.\w+)*\s+(0x[0-9a-f]+)", text)  # cuobjdump: a branch names an address
            if to:
                name = f".L_x_at{int(to.group(1), 16):x}"
                labels[name] = int(to.group(1), 16)
                text = text.replace(to.group(1), f"`({name})")
            instrs.append(Instr(addr, text, locs))
    if not instrs:
        raise ValueError("no SASS instruction found in the disassembly")
    return instrs, labels


def sass_text(instrs: list[Instr], labels: dict) -> str:
    """The instructions as text for the loop analysis: one per line, each branch label on a line
    of its own before the instruction it names."""
    at = collections.defaultdict(list)
    for name, addr in labels.items():
        at[addr].append(name)
    lines = []
    for ins in instrs:
        lines += [f"{name}:" for name in at.get(ins.addr, ())]
        lines.append(ins.text + " ;")
    return "\n".join(lines)


def sass_of(kernel):
    """(SASS text of a compiled kernel, its instructions, its labels), or (None, [], {}) without
    the CUDA tools (the PTX analysis still runs)."""
    try:
        instrs, labels = disassemble(kernel.asm["cubin"])
    except Exception:  # noqa: BLE001 -- no nvdisasm/cuobjdump here
        return None, [], {}
    return sass_text(instrs, labels), instrs, labels


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


def _span(fn) -> tuple:
    """(file, line of its `def`, last line) of a Python function (decorators are not its lines)."""
    import ast
    import inspect
    import textwrap
    fn = getattr(fn, "fn", fn)  # a JITFunction holds the Python function
    lines, first = inspect.getsourcelines(fn)  # from the first decorator
    node = ast.parse(textwrap.dedent("".join(lines))).body[0]
    return os.path.realpath(inspect.getsourcefile(fn)), first + node.lineno - 1, first + len(lines) - 1


def partition_functions(kernel) -> list[tuple]:
    """(name, file, first line, last line) of each function a Gluon kernel hands to
    gl.warp_specialize, the default partition first -- read from the kernel's source (ast)."""
    import ast
    import inspect
    import textwrap

    fn = getattr(kernel, "fn", kernel)
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "warp_specialize" and node.args \
                and isinstance(node.args[0], (ast.List, ast.Tuple)):
            parts = [fn.__globals__[pair.elts[0].id] for pair in node.args[0].elts]
            return [(getattr(p, "fn", p).__name__, *_span(p)) for p in parts]
    return []


def owners(instrs: list[Instr], parts: list[tuple], kernel_span: tuple) -> list[str | None]:
    """The partition each instruction belongs to: the first source position of its chain
    (innermost first) that lies in a partition's function. An instruction without one -- a
    shared helper under triton 3.6, which prints no inlining chain, or the kernel's `def`
    line, which the compiler gives code it cannot place -- belongs to the partition of the
    instruction before it (each partition's code is one stretch of the kernel). None: the
    kernel's own set-up, at the other lines of the kernel function."""
    k_file, k_first, k_last = kernel_span
    out, cur = [], None
    for ins in instrs:
        locs = [(os.path.realpath(f), n) for f, n in ins.locs]
        named = next((name for f, n in locs for name, pf, lo, hi in parts if f == pf and lo <= n <= hi), None)
        if named is not None:
            cur = named
        elif locs and locs[-1][0] == k_file and k_first < locs[-1][1] <= k_last:
            cur = None
        out.append(cur)
    return out


def _loops(instrs: list[Instr], labels: dict):
    """(first index, last index) of every backward branch's loop, in address order."""
    index = {ins.addr: i for i, ins in enumerate(instrs)}
    found = []
    for j, ins in enumerate(instrs):
        m = SASS["branch"].search(ins.text)
        if m and m.group(1) in labels and labels[m.group(1)] <= ins.addr:
            found.append((index[labels[m.group(1)]], j))
    return found


def _registers_named(texts) -> int:
    """1 + the highest register index the instructions name (an HGMMA's accumulator spans N/2
    registers from the one it names, a .64/.128 access 2/4): a floor of what the code holds."""
    top = -1
    for t in texts:
        width = 4 if ".128" in t else 2 if ".64" in t else 1
        for n in map(int, re.findall(r"\bR(\d+)\b", t)):
            top = max(top, n + width - 1)
        m = re.match(r"HGMMA\.64x(\d+)x\d+\S*\s+R(\d+)", t)
        if m:
            top = max(top, int(m.group(2)) + int(m.group(1)) // 2 - 1)
    return top + 1


def analyse_partitions(kernel, instrs, labels, ptx, ttgir, ptxas_log, num_warps, block_m, block_n,
                       tiles_per_iteration=2):
    """Version 6 per partition, from the whole SASS. Each partition's KV loop does one tile's
    worth of a pair's MMAs (its S, and its half of both P V products), so
    executed/useful = (MMA FLOP of the loops) / (loops x useful FLOP of a tile).
    The copies-in-flight replay assumes that every mbarrier wait retires a copy, which is false
    when partitions also wait on each other: it is not run here (None)."""
    from .dims import D_K, D_V
    parts = partition_functions(kernel)
    who = owners(instrs, parts, _span(kernel))
    d = SASS
    workers = [int(x) for x in re.findall(r"^\s*partition\d+\(.*\)\s*num_warps\((\d+)\)", ttgir, flags=re.M)]
    asked = re.search(r"requestedRegisters = array<i32: ([\d, ]+)>", ttgir)
    asked = [int(x) for x in asked.group(1).split(",")] if asked else []
    setmaxnreg = sorted({int(x) for x in re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx)})
    default_regs = [x for x in setmaxnreg if x not in asked] or asked[:1] or [None]
    cap = re.search(r"^\.maxnreg (\d+)", ptx, flags=re.M)
    useful = 2 * block_m * block_n * (D_K + D_V)
    rows, loops = [], []
    for k, (name, *_rest) in enumerate(parts):
        mine = [i for i, w in enumerate(who) if w == name]
        if not mine:
            continue
        shapes = set(_mma_shapes([instrs[i].text for i in mine], d))
        best = None
        for a, b in _loops(instrs, labels):
            if all(who[i] == name for i in range(a, b + 1)) and shapes and \
                    set(_mma_shapes([x.text for x in instrs[a:b + 1]], d)) == shapes:
                if best is None or b - a < best[1] - best[0]:
                    best = (a, b)
        row = dict(partition=name, warps=workers[k - 1] if k else num_warps,
                   setmaxnreg=(asked[k - 1] if k - 1 < len(asked) else None) if k else default_regs[0],
                   registers_named=_registers_named(instrs[i].text for i in mine), instructions=len(mine),
                   local_ops=sum(bool(d["local"].search(instrs[i].text)) for i in mine))
        if best:
            body = [x.text for x in instrs[best[0]:best[1] + 1]]
            executed = sum(mma_flop(x, d, 4) for x in body)
            row.update(loop_instructions=len(body), instructions_per_tile=round(len(body) / tiles_per_iteration),
                       loop_mma=sum(bool(d["mma"].search(x)) for x in body),
                       loop_local_ops=sum(bool(d["local"].search(x)) for x in body), loop_executed=executed)
            loops.append(row)
        rows.append(row)
    if not loops:
        return dict(loop=None, partitions=rows)
    ratio = sum(r["loop_executed"] for r in loops) / (len(loops) * useful)
    return dict(loop="sass", kv_loops=len(loops), partitions=rows, sass_instructions=len(instrs),
                instructions=max(r["loop_instructions"] for r in loops),
                mma=sum(r["loop_mma"] for r in loops) // len(loops),
                mma_shapes=sorted({s for r in loops for s in _mma_shapes(
                    [x.text for x in instrs], d)}), executed=sum(r["loop_executed"] for r in loops) / len(loops),
                useful=useful, ratio=round(ratio, 3),
                local_ops=sum(r["loop_local_ops"] for r in loops),
                maxnreg=int(cap.group(1)) if cap else None, maxnreg_ignored="Too many maxnreg" in ptxas_log,
                async_copies=None, sync_loads=None, in_flight_at_mma=None, overlap=None)


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
    sass, instrs, labels = sass_of(k)
    row["sass_instructions"] = len(instrs) or None  # the whole kernel, every instruction read
    workers = re.findall(r"^\s*partition\d+\(.*\)\s*num_warps\((\d+)\)", k.asm.get("ttgir", ""), flags=re.M)
    if workers and instrs:  # warp-specialized: one KV loop per partition (version 6)
        loop = analyse_partitions(launch.kernel, instrs, labels, k.asm["ptx"], k.asm["ttgir"], log, launch.num_warps,
                                  bm, bn)
    else:
        loop = analyse_loop(sass, "sass", launch.num_warps, bm, bn) if sass else dict(loop=None)
    if loop.get("loop") is None:  # no SASS (or no MMA loop in it): read the PTX
        loop = dict(analyse_loop(k.asm["ptx"], "ptx", launch.num_warps, bm, bn),
                    **{k2: v for k2, v in loop.items() if k2 == "partitions"})
    row.update(loop)
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
    sass = sass_of(k)[0]
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


COLUMNS = ("kernel", "BLOCK_M x N", "warps", "stages", "shared (B)", "regs", "spills st/ld (B)", "MMA in KV loop",
           "executed/useful MMA", "instr/tile", "copies in flight at MMA", "overlap", "LDL/STL in KV loop",
           "SASS instr", "register cap")  # the first twelve in the order chapters 6 and 8 read them


def _cells(*cells) -> str:
    """One table line of len(COLUMNS) cells (missing cells empty)."""
    cells = [str(c) for c in cells] + [""] * (len(COLUMNS) - len(cells))
    return "| " + " | ".join(cells) + " |"


def format_table(rows):
    """The compile report as markdown. A warp-specialized kernel gets one more line per partition:
    its setmaxnreg and the registers its code names, its KV loop's LDL/STL, instructions per tile
    (its loop does a pair of tiles per iteration: loop instructions / 2)."""
    lines = [_cells(*COLUMNS), "|" + "---|" * len(COLUMNS)]
    for r in rows:
        if r.get("error"):
            lines.append(_cells(r["label"], r["error"]))
            continue
        shapes = f"{r['mma']}x" if r.get("mma") else "-"
        if r.get("mma_shapes"):
            shapes = f"{r['mma']}: " + ", ".join(s.split(".")[0] + "." + ".".join(s.split(".")[1:2]) if "." in s else s
                                                   for s in r["mma_shapes"])
        ratio = f"{r['ratio']:.2f}" if r.get("ratio") else "-"
        ov = "-" if r.get("overlap") is None else ("yes" if r["overlap"] else "no")
        inflight = "-" if r.get("in_flight_at_mma") is None else str(r["in_flight_at_mma"])
        warps = "+".join(str(w) for w in [r["num_warps"]] + r.get("worker_warps", []))
        looped = [p for p in r.get("partitions", []) if "loop_instructions" in p]
        per_tile = " / ".join(str(p["instructions_per_tile"]) for p in looped) if looped else r.get("instructions", "-")
        cap = "-"
        if r.get("maxnreg") is not None:
            cap = f".maxnreg {r['maxnreg']}" + (" (IGNORED by ptxas: over 255)" if r.get("maxnreg_ignored") else "")
        local = "-" if r.get("loop") is None else r.get("local_ops", "-")
        lines.append(_cells(r["label"], f"{r['block_m'] or '-'} x {r['block_n'] or '-'}", warps, r["num_stages"],
                            r["shared"], r["regs"], f"{r['spill_stores']}/{r['spill_loads']}", shapes, ratio, per_tile,
                            inflight, ov, local, r.get("sass_instructions") or "-", cap))
        for i, p in enumerate(r.get("partitions", [])):
            lines.append(_cells(f"{r['label']} · {p['partition']} ({'default' if i == 0 else 'worker'} partition)", "",
                                p["warps"], "", "", f"{p['registers_named']} named", "", p.get("loop_mma", "-"), "",
                                f"{p['instructions_per_tile']} ({p['loop_instructions']} per pair)"
                                if "loop_instructions" in p else "-", "", "", p.get("loop_local_ops", "-"),
                                p["instructions"], f"setmaxnreg {p['setmaxnreg']}"))
        if r.get("tiles") == [64] and r.get("ratio"):  # a version that ships 64-row tiles only (wgmma)
            lines.append(sixteen_row_line(r))
    return "\n".join(lines)


def sixteen_row_line(r):
    """The same compiled kernel at h_q * s_q = 16 (derived, not another compile): a wgmma is
    m64, so 64 rows are computed for 16 real ones -- 4x the useful MMA work. The 16-row path
    the compiler does build is version 4's BLOCK_M=16 tile (mma.sync, executed/useful 1.00)."""
    return _cells(f"{r['label']}, at h_q*s_q=16 (derived)", "16 real of 64 rows", "", "", "", "", "", "",
                  f"{r['ratio'] * r['block_m'] / 16:.2f}")


if __name__ == "__main__":
    main()
