"""The GPU check's deliberate case matrix, the kernel specializations it compiles, and the
time budget of kernels/gpu_check.sh (tests/ may import anything; kernels/ never imports tests/).

  python -m tests.gpu_check list                        the cases and the specializations they need
  python -m tests.gpu_check compile FILE.json [--dry-run] [--jobs N]
        compile every specialization once, in parallel. On a GPU through triton's own launcher
        (JITFunction.warmup): its on-disk cache is what the test and bench steps then load.
        --dry-run: triton.compile for sm_90 on this CPU (kernels.compile_report.compile_launch),
        which is the compile an H200 would run -- so the compile step's budget is measured.
  python -m tests.gpu_check host FILE.json              (dry run) each test step's host work at the
        cases' GPU sizes -- building the NaN-poisoned inputs, the float64 and GPU-like references
        -- timed here
  python -m tests.gpu_check budget OUT_DIR              the one-H200 budget (OUT_DIR/budget.md)

The matrix (why each shape is there is in its `why`):
  dense   versions 1-4 (the rows of kernels.mla_decode.VERSION_TABLE that are not hopper_only),
          every cache their row reads: FlashMLA's decode shapes (h_q 128 with s_q 1, s_q 2 causal)
          and h_q 16 (BLOCK_M 16 and, at s_q 2, 32), ragged lengths around the 64-key tile and page
          (0, 1, 63, 64, 65, 127-129), one 16K sequence among one-token ones (the plan splits it:
          the combine runs), causal rows that see no key.
  hopper  versions 5 and 6 (hopper_only rows): the cases their first GPU run must pass, pages
          64, 128, 256.
  sparse  version 7 (call="sparse"): DeepSeek-V3.2's top-k 2048 at h_q 128 (s_q 2) and 64
          (s_q 1), an empty sequence (every index -1), lists with -1 tails; each case twice
          (variants): with the default top-k split (at these small batches: several pieces and
          the combine) and with batch_invariant=True (one program per list).
  prefill the prefill kernels of chapter 9 (kernels.mla_prefill.PREFILL_TABLE, the chunked prefix
          context): their cases are tests/gpu_check_prefill.py's (ragged and empty prompts about
          the tiles, extends after a prefix, queries that see no key, NaN-poisoned rows and
          workspace, a prefix in several chunks of a paged cache, FlashMLA's sparse prefill
          shapes with invalid entries), checked with the prefill tolerance kinds.
Every case runs on a cache whose unused slots are NaN and whose unused table entries are out of
range (tests.test_kernels.make_case / tests.test_kernel_sparse.served_case), FP8 rows with
power-of-two scales (FlashMLA's, the default), and is checked against both references --
float64 and the GPU-like one of its version (references(), gpu_reference()) -- through
kernels.reference.check_against_references, as every kernel test is. A new version is in the
matrix through its row of the table, never through this file. In Triton's CPU interpreter (the
dry run, CI) each case is checked at its GPU size in emulation (the GPU-like reference within
the GPU's tolerances of float64), and, where the version runs there, shrunk (shrunk()): the
same edges, a few hundred keys, at most 16 heads.

The specializations: every kernel launch of the matrix (the prefill cases included), of the
batch-invariance test (marked gpu_check), of `kernels/bench.py --quick` (its quick cases, its
versions), of `kernels/bench_sparse.py --quick` and of `kernels/bench_prefill.py --quick`,
deduplicated by what triton's launcher specializes on (kernels.compile_report.specialize: dtypes,
16-byte alignment, integers divisible by 16 or equal to 1, constexprs, compile options)."""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests import gpu_check_prefill as P

ROOT = Path(__file__).resolve().parent.parent
SCALE = 192 ** -0.5  # what DeepSeek's MLA passes (FlashMLA's tests too)

# ---------------------------------------------------------------------------------------
# The matrix
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    name: str
    lens: tuple  # sequence lengths (dense) or lengths the top-k is drawn from (sparse)
    s_q: int
    h_q: int
    page: int
    causal: bool
    why: str
    topk: int = 0  # sparse: entries per query token


DENSE = (
    Shape("h128-ragged", (0, 1, 63, 64, 65, 127, 128, 129, 700, 4097), 1, 128, 64, True,
          "FlashMLA's s_q=1, h_q=128 decode (causal, as the benchmark calls it: the same kernels): an empty "
          "sequence, one key, both sides of a tile and a page, long"),
    Shape("h128-mtp-causal", (0, 1, 700, 2049, 4096), 2, 128, 64, True,
          "s_q=2 (MTP), causal: row 0 of the one-key sequence sees nothing (out 0, lse -inf)"),
    Shape("h16-skew", (1,) * 20 + (16384,), 1, 16, 64, False,
          "BLOCK_M=16; one 16K sequence among one-token ones: the plan cuts it, the combine runs"),
    Shape("h16-mtp-causal", (0, 1, 65, 1000), 2, 16, 64, True, "32 query rows: the BLOCK_M=32 tile, causal"),
)
HOPPER = (
    DENSE[0], DENSE[2],
    Shape("h128-mtp-causal-page128", (3, 130, 2048), 2, 128, 128, True, "s_q=2 causal on 128-key pages"),
    Shape("h64-page256", (2000,) * 8, 1, 64, 256, True, "equal lengths on 256-key pages, 64 heads"),
)
SPARSE = (
    Shape("v32-h128-mtp", (5000, 2047, 1, 9000), 2, 128, 64, False,
          "DeepSeek-V3.2's decode: 128 heads, s_q 2, top-k 2048; sequences shorter than the top-k", topk=2048),
    Shape("h64-empty", (0, 3000, 700), 1, 64, 64, False,
          "64 heads, s_q 1: an empty sequence (every index -1), -1 tails", topk=2048),
)
STEPS = {"dense": DENSE, "hopper": HOPPER, "sparse": SPARSE}


@dataclass(frozen=True)
class Case:
    version: str
    cache: str  # "bf16" or "fp8"
    shape: Shape
    seed: int

    @property
    def id(self) -> str:
        return f"{self.version}-{self.cache}-{self.shape.name}"

    @property
    def inputs_key(self) -> tuple:
        """Cases that share this run on the same inputs (and reference)."""
        return self.cache, self.shape, self.seed, self.shape.topk > 0


def step_of(version) -> str:
    """Which test step of gpu_check.sh runs a version: its row of the table decides."""
    if version.call == "sparse":
        return "sparse"
    return "hopper" if version.hopper_only else "dense"


def cases(step: str | None = None) -> list[Case]:
    """The matrix, from the version table: every version, every cache its row reads, every
    shape of its step. Ordered by input set (shape, cache), then version: the cases that share
    inputs and a reference are adjacent, and a test process builds each set once."""
    from kernels.mla_decode import VERSION_TABLE
    out = []
    for name_of_step, shapes in STEPS.items():
        if step and step != name_of_step:
            continue
        for i, shape in enumerate(shapes):
            for cache in ("bf16", "fp8"):
                out += [Case(name, cache, shape, seed=100 + i) for name, v in VERSION_TABLE.items()
                        if step_of(v) == name_of_step and cache in v.caches]
    return out


SHRUNK_TOPK = 100  # two of the interpreter's 64-entry tiles: the default split cuts each list in two


def shrunk(case: Case) -> Case:
    """The case at interpreter size: lengths capped at 150 (0, 1, 63, 64, 65, 127-129 stay),
    at most 16 heads (2 for one-program-per-row versions), top-k SHRUNK_TOPK."""
    from kernels.mla_decode import VERSION_TABLE
    s = case.shape
    heads = 2 if VERSION_TABLE[case.version].block_m == (1,) else min(s.h_q, 16)
    lens = tuple(sorted(set(min(n, 150) for n in s.lens)))
    topk = min(s.topk, SHRUNK_TOPK) if s.topk else 0
    return Case(case.version, case.cache, Shape(s.name, lens, s.s_q, heads, s.page, s.causal, s.why, topk), case.seed)


# ---------------------------------------------------------------------------------------
# Inputs and launches
# ---------------------------------------------------------------------------------------

def inputs(case: Case, device, contents: bool = True):
    """The case's tensors on `device`. contents=True: the test's (NaN-poisoned caches, out-of-range
    unused table entries, random q); False: zeros of the same shapes, dtypes and table width,
    which is all a launch's specialization depends on (the compile step builds these)."""
    import numpy as np
    import torch
    s = case.shape
    b = len(s.lens)
    if s.topk:  # sparse: q, uint8 cache, int32 indices
        if contents:
            from tests.test_kernel_sparse import served_case
            q, cache, idx = served_case(list(s.lens), s_q=s.s_q, h_q=s.h_q, topk=s.topk, page=s.page, seed=case.seed)
            return (q.to(device), torch.from_numpy(cache).to(device),
                    torch.from_numpy(np.ascontiguousarray(idx)).to(torch.int32).to(device))
        from kernels.dims import FP8_ROW_BYTES
        return (torch.zeros(b, s.s_q, s.h_q, 576, dtype=torch.bfloat16, device=device),
                torch.zeros(1, s.page, 1, FP8_ROW_BYTES, dtype=torch.uint8, device=device),
                torch.zeros(b, s.s_q, s.topk, dtype=torch.int32, device=device))
    fp8 = case.cache == "fp8"
    if contents:
        from tests.test_kernels import make_case
        return tuple(t.to(device) for t in make_case(list(s.lens), page=s.page, s_q=s.s_q, h_q=s.h_q, fp8=fp8,
                                                       seed=case.seed))
    from kernels.dims import D_K, FP8_ROW_BYTES
    width = max(max(-(-n // s.page) for n in s.lens), 1)  # mlacourse.paged.make_paged_cache's table width
    kv = torch.zeros(1, s.page, 1, FP8_ROW_BYTES, dtype=torch.uint8, device=device) if fp8 else \
        torch.zeros(1, s.page, 1, D_K, dtype=torch.bfloat16, device=device)
    return (torch.zeros(b, s.s_q, s.h_q, D_K, dtype=torch.bfloat16, device=device), kv,
            torch.zeros(b, width, dtype=torch.int32, device=device), torch.tensor(s.lens, dtype=torch.int32,
                                                                                  device=device))


def call_options(case: Case) -> dict:
    """What the test passes to the dense call besides the tensors."""
    return dict(softmax_scale=SCALE, causal=case.shape.causal, is_fp8_kvcache=case.cache == "fp8",
                version=case.version)


def variants(case: Case) -> list[tuple[str, dict]]:
    """The calls the test of a case makes on its inputs, as (label, options). A sparse case runs
    with the default top-k split (the matrix's batches are small: several pieces, then the
    combine) and with batch_invariant=True (one program per list, no combine): both paths of the
    kernel on the GPU. A dense case: one call."""
    if case.shape.topk:
        return [("top-k split", {}), ("one piece", dict(batch_invariant=True))]
    return [("", {})]


def prepare_case(case: Case, tensors, options: dict, gpu=None):
    """(launches, out, lse) of one call of the case on `tensors` (built, not run; out and lse
    allocated). gpu=True: the launches a GPU ships, built anywhere."""
    from kernels import mla_decode as md
    from kernels import sparse_decode
    if case.shape.topk:
        return sparse_decode.prepare(*tensors, softmax_scale=SCALE, gpu=gpu, **options)
    _, launches, out, lse = md.prepare(*tensors, 512, gpu=gpu, **call_options(case), **options)
    return launches, out, lse


def case_launches(case: Case, device="cpu", contents: bool = False) -> list:
    """The launches the test of this case makes on a GPU, every variant (built, not run;
    contents=False: on zero tensors of the test's shapes, which specialize the same --
    tests/test_kernel_gpu_check.py checks)."""
    t = inputs(case, device, contents=contents)
    extra = dict(check_indices=False) if case.shape.topk else {}
    return [lc for _, opts in variants(case) for lc in prepare_case(case, t, dict(opts, **extra), gpu=True)[0]]


def batch_invariance_launches(device="cpu") -> list:
    """The launches of tests/test_kernel_batch_invariant.py's GPU-check test (marked gpu_check)."""
    from kernels import mla_decode as md
    from tests import test_kernel_batch_invariant as B
    out = []
    for version, opts in B.GPU_CHECK_VERSIONS:
        for lens, where in ((B.BATCH_A, 0), (B.BATCH_B, 3)):
            q, cache, bt, sl = (t.to(device) for t in B.batch_with_followed_sequence(lens, where))
            for inv in (False, True):
                out += md.prepare(q, cache, bt, sl, 512, gpu=True, version=version, batch_invariant=inv, **opts)[1]
    return out


def bench_launches(hopper: bool, device="cpu") -> list:
    """The launches `kernels/bench.py --quick` makes (the versions of its GPU step: portable, or
    hopper), built from its own case list and length draw on zero tensors of the same shapes."""
    import numpy as np
    import torch

    from kernels import bench
    from kernels import mla_decode as md
    from kernels.dims import D_K, FP8_ROW_BYTES
    args = bench.parse_args(["--quick", "--versions", "hopper" if hopper else "portable", "--out", os.devnull])
    rng = np.random.default_rng(args.seed)
    out, lens_of = [], {}
    for cache, mean_sk, s_q, h_q in bench.bench_cases(True):
        if (mean_sk, s_q) not in lens_of:  # bench.run draws one set of lengths per (s_k, s_q), first
            lens_of[(mean_sk, s_q)] = bench.draw_lengths(rng, args.b, mean_sk, s_q, args.lengths)
        lens = lens_of[(mean_sk, s_q)]
        width = max(-(-int(n) // bench.PAGE) for n in lens)
        fp8 = cache == "fp8"
        q = torch.zeros(args.b, s_q, h_q, D_K, dtype=torch.bfloat16, device=device)
        kv = torch.zeros(1, bench.PAGE, 1, FP8_ROW_BYTES if fp8 else D_K,
                         dtype=torch.uint8 if fp8 else torch.bfloat16, device=device)
        bt = torch.zeros(args.b, width, dtype=torch.int32, device=device)
        sl = torch.tensor([int(n) for n in lens], dtype=torch.int32, device=device)
        for name in args.versions:
            v = md.VERSION_TABLE[name]
            if cache not in v.caches:
                continue
            opts = dict(plan=v.make_plan(sl, h_q, s_q)) if v.takes_plan else {}
            out += md.prepare(q, kv, bt, sl, 512, softmax_scale=SCALE, causal=True, is_fp8_kvcache=fp8, gpu=True,
                              version=name, **opts)[1]
    return out


def sparse_bench_inputs(b: int, s_q: int, h_q: int, topk: int, device="cpu"):
    """Zero tensors shaped, typed and aligned as kernels/bench_sparse.py's build_case makes them:
    q [b, s_q, h_q, 576] bf16, one 64-row page of uint8 FP8 rows (a launch reads the cache's
    strides, not its page count), indices int32 [b, s_q, top-k]."""
    import torch

    from kernels import bench_sparse
    from kernels.dims import D_K, FP8_ROW_BYTES
    return (torch.zeros(b, s_q, h_q, D_K, dtype=torch.bfloat16, device=device),
            torch.zeros(1, bench_sparse.PAGE, 1, FP8_ROW_BYTES, dtype=torch.uint8, device=device),
            torch.zeros(b, s_q, topk, dtype=torch.int32, device=device))


def sparse_bench_launches(device="cpu") -> list:
    """The launches `kernels/bench_sparse.py --quick` makes, every version with call="sparse":
    at b 128 one piece per top-k list, at b 2 several and the combine."""
    from kernels import bench_sparse
    from kernels import sparse_decode
    out = []
    for b, s_q, h_q, topk, _ in bench_sparse.bench_cases(quick=True):
        t = sparse_bench_inputs(b, s_q, h_q, topk, device)
        for v in bench_sparse.sparse_versions().values():
            out += sparse_decode.prepare(*t, softmax_scale=bench_sparse.SCALE, gpu=True, check_indices=False,
                                         launcher=v.launch)[0]
    return out


def spec_key(launch) -> str:
    """What triton's launcher specializes a kernel on, as one string."""
    from kernels.compile_report import specialize
    sig, constexprs, attrs = specialize(launch)
    fn = getattr(launch.kernel, "fn", launch.kernel)
    return json.dumps([f"{fn.__module__}.{fn.__name__}", sig, {k: str(v) for k, v in constexprs.items()},
                       {str(k): v for k, v in attrs.items()}, launch.compile_options()], sort_keys=True, default=str)


def sources(device="cpu"):
    """(step, what, build) for every group of launches the GPU check makes, in a fixed order."""
    out = [(step_of_case, c.id, (lambda c=c: case_launches(c, device)))
           for step_of_case in STEPS for c in cases(step_of_case)]
    out.append(("dense", "batch invariance", lambda: batch_invariance_launches(device)))
    out.append(("bench", "bench.py --quick --versions portable", lambda: bench_launches(False, device)))
    out.append(("bench-gluon", "bench.py --quick --versions hopper", lambda: bench_launches(True, device)))
    out.append(("sparse-bench", "bench_sparse.py --quick", lambda: sparse_bench_launches(device)))
    out += [("prefill", c.id, (lambda c=c: P.case_launches(c, device))) for c in P.cases()]
    out.append(("prefill-bench", "bench_prefill.py --quick", lambda: P.bench_launches(device)))
    return out


def specializations(device="cpu") -> tuple[list, list]:
    """([(key, label, launch, steps, (source index, launch index))] deduplicated, in a fixed order;
    [errors]). A group that cannot be built (no Gluon in this triton, a launcher that refuses) is
    an error row, not a crash."""
    found, order, errors = {}, [], []
    for i, (step, what, build) in enumerate(sources(device)):
        try:
            launches = build()
        except Exception as e:  # noqa: BLE001
            errors.append(f"{what}: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
            continue
        for j, launch in enumerate(launches):
            key = spec_key(launch)
            if key not in found:
                found[key] = (key, launch.label, launch, set(), (i, j))
                order.append(key)
            found[key][3].add(step)
    return [found[k] for k in order], errors


# ---------------------------------------------------------------------------------------
# The compile step
# ---------------------------------------------------------------------------------------

_WORKER: dict = {}  # a worker's built sources: source index -> its launches


def _launch_at(device, where):
    """A worker rebuilds only the group of launches a specialization came from."""
    i, j = where
    if i not in _WORKER:
        _WORKER[i] = sources(device)[i][2]()
    return _WORKER[i][j]


def _compile_one(job):
    """Compile one specialization (in a worker process); returns its row."""
    index, label, steps, where, dry_run, device, pool_start = job
    ready = time.time()
    launch = _launch_at(device, where)
    t = time.time()
    row = dict(index=index, label=label, steps=steps, pid=os.getpid(), ready_s=round(ready - pool_start, 2),
               build_s=round(t - ready, 2))
    try:
        if dry_run:
            from kernels.compile_report import compile_launch
            compile_launch(launch, fresh=True)  # sm_90, on this CPU: what the GPU's compile step runs
        else:
            launch.kernel.warmup(grid=launch.grid, **launch.args, **launch.constexprs, num_warps=launch.num_warps,
                                 num_stages=launch.num_stages, **launch.options)
    except Exception as e:  # noqa: BLE001 -- one failed compile is a row; its test step compiles it again
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
    row["seconds"] = round(time.time() - t, 3)
    return row


def compile_all(path: str, dry_run: bool, jobs: int) -> dict:
    if dry_run and os.environ.get("TRITON_INTERPRET") == "1":
        sys.exit("gpu_check compile --dry-run: unset TRITON_INTERPRET (the interpreter cannot compile)")
    device = "cpu" if dry_run else "cuda"
    t0 = time.time()
    specs, errors = specializations(device)
    enumerate_s = time.time() - t0
    n = len(specs)
    jobs = max(1, min(jobs, n))
    pool_start = time.time()
    work = [(i, label, sorted(steps), where, dry_run, device, pool_start)
            for i, (_, label, _, steps, where) in enumerate(specs)]
    if jobs > 1:
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(jobs) as pool:
            rows = pool.map(_compile_one, work, chunksize=1)
    else:
        rows = [_compile_one(w) for w in work]
    record = dict(dry_run=dry_run, jobs=jobs, cpus=os.cpu_count(), specializations=n, enumerate_s=round(enumerate_s, 2),
                  wall_s=round(time.time() - t0, 2), errors=errors, rows=rows)
    import triton
    record["triton"] = triton.__version__
    Path(path).write_text(json.dumps(record, indent=1))
    failed = [r for r in rows if r.get("error")]
    print(f"compiled {n - len(failed)} of {n} specializations ({'sm_90 on this CPU' if dry_run else 'this GPU'}) "
          f"in {record['wall_s']:.1f} s with {jobs} jobs; serial sum {sum(r['seconds'] for r in rows):.1f} s"
          + (f"; {len(failed)} failed, first: {failed[0]['label']}: {failed[0]['error']}" if failed else "")
          + (f"; not enumerated: {errors}" if errors else ""))
    return record


# ---------------------------------------------------------------------------------------
# References (what the test compares with; the dry run's host step times them)
# ---------------------------------------------------------------------------------------

def operands(case: Case):
    """The type the case's version rounds K, V and P to on a GPU (its row's dot_operands; q is
    bf16 in every case): what its GPU-like reference rounds to."""
    import torch

    from kernels.mla_decode import VERSION_TABLE
    return VERSION_TABLE[case.version].gpu_operands(torch.bfloat16)


def _cpu(tensors):
    return tuple(t.cpu() for t in tensors)


def reference(case: Case, tensors):
    """The float64 reference (kernels.reference, on the CPU): (out, lse), both float64."""
    from kernels.reference import reference_decode, reference_sparse_decode
    if case.shape.topk:
        return reference_sparse_decode(*_cpu(tensors), SCALE)
    return reference_decode(*_cpu(tensors), 512, SCALE, case.shape.causal, case.cache == "fp8")


def gpu_reference(case: Case, tensors, ops=None):
    """The GPU-like reference of the case's version (kernels.reference mode="gpu": K, V and P
    rounded to `ops`, default operands(case)): (out in q's dtype, lse float32), on the CPU."""
    from kernels.reference import reference_decode, reference_sparse_decode
    ops = operands(case) if ops is None else ops
    if case.shape.topk:
        return reference_sparse_decode(*_cpu(tensors), SCALE, mode="gpu", operands=ops)
    return reference_decode(*_cpu(tensors), 512, SCALE, case.shape.causal, case.cache == "fp8", mode="gpu",
                            operands=ops)


def v_rms(case: Case, tensors) -> float:
    """The rms of the case's V values, for gpu_tolerances, as the kernel tests take it: a dense
    cache is drawn from N(0, 1) (tests.test_kernels.V_RMS); a sparse case's, measured on the rows
    its indices name (tests.test_kernel_sparse.case_v_rms)."""
    if case.shape.topk:
        from tests.test_kernel_sparse import case_v_rms
        _, cache, idx = _cpu(tensors)
        return case_v_rms(cache.numpy(), idx.numpy())
    from tests.test_kernels import V_RMS
    return V_RMS


# ---------------------------------------------------------------------------------------
# Host work (dry run)
# ---------------------------------------------------------------------------------------

def host_times(path: str) -> dict:
    """Per test step: seconds to build each distinct input set at its GPU size and compute its
    float64 reference and the GPU-like reference of each operand type its versions round to, as
    the step's pytest process does once per input set (the test keeps them); and the pytest
    start-up of that step (imports and collection), each timed here."""
    out = dict(steps={})
    for step in STEPS:
        sets = {}  # inputs_key -> (first case, operand types of its versions)
        for case in cases(step):
            first, ops = sets.setdefault(case.inputs_key, (case, []))
            if operands(case) not in ops:
                ops.append(operands(case))
        rows = []
        for case, ops in sets.values():
            t = time.perf_counter()
            tensors = inputs(case, "cpu")
            t_in = time.perf_counter() - t
            reference(case, tensors)
            t_ref = time.perf_counter() - t - t_in
            t = time.perf_counter()
            for o in ops:
                gpu_reference(case, tensors, o)
            t_gpu = time.perf_counter() - t
            rows.append(dict(inputs=case.id, build_s=round(t_in, 3), reference_s=round(t_ref, 3),
                             gpu_reference_s=round(t_gpu, 3), operands=[str(o) for o in ops],
                             bytes=sum(x.numel() * x.element_size() for x in tensors)))
            print(f"{step:7s} {case.id:40s} build {t_in:6.2f} s  float64 reference {t_ref:6.2f} s  GPU-like "
                  f"({len(ops)}) {t_gpu:6.2f} s", flush=True)
        out["steps"][step] = rows
    out["steps"]["prefill"] = P.host_rows()
    t = time.perf_counter()
    from tests import test_kernel_batch_invariant as B
    for lens, where in ((B.BATCH_A, 0), (B.BATCH_B, 3)):
        B.batch_with_followed_sequence(lens, where)
    out["batch_invariance_build_s"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", "-m",
                           "gpu_check", "tests/test_kernel_gpu_matrix.py"], capture_output=True, text=True, cwd=ROOT)
    out["pytest_startup_s"] = round(time.perf_counter() - t, 2)
    out["pytest_startup_rc"] = proc.returncode
    Path(path).write_text(json.dumps(out, indent=1))
    return out


# ---------------------------------------------------------------------------------------
# The budget
# ---------------------------------------------------------------------------------------

H200_CPUS = 16  # KINDS.md: the H200 machine's cores
H200_BF16_FLOPS = 790e12  # KINDS.md: an 8192^3 bf16 product through PyTorch on an H200 here
H200_COPY_BYTES = 4.3e12  # KINDS.md: a device-to-device copy, bytes read + written
# Assumptions (not measured here; each stated in the budget table):
CUDA_INIT_S = 3.0  # a CUDA context and torch's first GPU call, per process
LOAD_S = 0.05  # loading one compiled kernel from triton's on-disk cache
KERNEL_SLACK = 10.0  # a kernel of ours against the roofline floor of its work
LAUNCH_S = 20e-6  # host cost of one triton launch
H2D_BYTES = 10e9  # pageable host-to-device copies
FP64_FLOPS = 30e12  # torch float64 products on an H200 (datasheet: 67 TFLOPS fp64 tensor): half assumed
DO_BENCH_S = 0.25  # triton.testing.do_bench: 25 ms warm-up + 100 ms of repetitions + its estimate, rounded up
PROFILER_S = 1.5  # bench.kernel_time_ms: torch.profiler set-up and 10 profiled calls
REF_PASSES = 10  # the benchmarks' float64 references on the GPU: elementwise passes over their scores (mask,
#                 max, exp, sum, rounding), each reading and writing them once
BUDGET_S = 480  # 8 minutes on one H200


def _prefill_kernel_estimate(case) -> float:
    """A prefill case's calls on an H200: roofline floor of its work (gpu_check_prefill.work) x slack,
    every variant, plus the host cost of its launches."""
    flop, nbytes = P.work(case)
    floor = max(flop / H200_BF16_FLOPS, nbytes / H200_COPY_BYTES)
    return len(P.variants(case)) * KERNEL_SLACK * floor + len(P.case_launches(case)) * LAUNCH_S


def _kernel_estimate(case: Case) -> float:
    """Roofline floor of the case's work on an H200 (FlashMLA's FLOP and byte counts) x slack."""
    from kernels.bench import work
    s = case.shape
    if s.topk:
        flop = len(s.lens) * s.s_q * 2 * s.h_q * s.topk * (576 + 512)
        nbytes = len(s.lens) * s.s_q * s.topk * 656
    else:
        flop, nbytes = work(list(s.lens), s.s_q, s.h_q, case.cache)
    return KERNEL_SLACK * max(flop / H200_BF16_FLOPS, nbytes / H200_COPY_BYTES) + 4 * LAUNCH_S


def _lpt(seconds: list, workers: int) -> float:
    """Makespan of jobs of these durations on `workers` processes, longest first to the least loaded."""
    loads = [0.0] * max(1, workers)
    for s in sorted(seconds, reverse=True):
        loads[loads.index(min(loads))] += s
    return max(loads)


def _bench_estimate(hopper: bool) -> tuple[float, str]:
    """kernels/bench.py --quick on an H200, from its case list (a model, not a measurement)."""
    import numpy as np

    from kernels import bench
    from kernels import mla_decode as md
    args = bench.parse_args(["--quick", "--versions", "hopper" if hopper else "portable,torch,flashmla",
                             "--out", os.devnull])
    lens = bench.draw_lengths(np.random.default_rng(args.seed), args.b, 8192, 1, args.lengths)
    s_k_max = (-(-int(max(lens)) // bench.PAGE)) * bench.PAGE
    total, timed = 0.0, 0
    for cache, mean_sk, s_q, h_q in bench.bench_cases(True):
        ref_flop = 2 * args.b * h_q * s_q * s_k_max * (576 + 512)  # exact_reference: padded, float64, on the GPU
        total += ref_flop / FP64_FLOPS
        for v in args.versions:
            if v in md.VERSION_TABLE and cache not in md.VERSION_TABLE[v].caches or v == "flashmla":
                continue  # not timed (flash_mla is not on the H200 machine: KINDS.md's package list)
            flop, nbytes = bench.work(lens, s_q, h_q, cache)
            call_s = KERNEL_SLACK * max(flop / H200_BF16_FLOPS, nbytes / H200_COPY_BYTES)
            total += DO_BENCH_S + PROFILER_S + 15 * call_s  # the gate's call, do_bench, 10 profiled calls
            timed += 1
    how = (f"{len(bench.bench_cases(True))} cases: float64 reference (padded to s_k {s_k_max}) at "
           f"{FP64_FLOPS / 1e12:.0f} TFLOP/s; {timed} (case, version) pairs x (do_bench {DO_BENCH_S} s + profiler "
           f"{PROFILER_S} s + 15 calls at {KERNEL_SLACK:.0f}x the roofline floor)")
    return total, how


def _prefill_reference_work(c: dict) -> tuple[float, float]:
    """(FLOP, bytes of one pass over the scores) of one of kernels/bench_prefill.py's references on
    the device (kernels.reference *_batched, float64): the expand path's score every (query, key)
    pair, masked afterwards (the prefix: its whole context, plus the float64 expansion); the
    sparse prefill's every entry, on gathered rows."""
    b, h, s_q, s_k = c["b"], c["h"], c["s_q"], c["s_k"]
    if c["kind"] == "sparse":
        return 2 * s_q * h * c["topk"] * (576 + 512), 8 * s_q * c["topk"] * (576 + h)
    flop = 2 * b * h * s_q * s_k * (192 + 128)
    if c["kind"] == "prefix":
        flop += 2 * b * s_k * 512 * h * (128 + 128)
    return flop, 8 * b * h * s_q * s_k


def _prefill_bench_estimate() -> tuple[float, str]:
    """kernels/bench_prefill.py --quick on an H200, from its case list (a model, not a measurement):
    per case both references on the device, then every implementation that runs there checked and
    timed (FlashAttention, FlashInfer and FlashMLA are not on the H200 machine: KINDS.md's package
    list; they cost an import attempt)."""
    from kernels import bench_prefill as B
    from kernels.mla_prefill import PREFILL_TABLE
    from mlacourse.prefill import fa_flops, prefill_attention_bytes
    not_there = ("fa2", "fa3", "flashinfer", "flashmla")
    total, timed = 0.0, 0
    for c in B.bench_cases(quick=True):
        ref_flop, ref_bytes = _prefill_reference_work(c)
        total += 2 * (ref_flop / FP64_FLOPS + REF_PASSES * ref_bytes / H200_COPY_BYTES)  # float64 and GPU-like
        nbytes = (c["s_q"] * c["topk"] * 1152 if c["kind"] == "sparse" else
                  c["b"] * prefill_attention_bytes(c["s_q"], c["s_k"], c["h"], 192, 128))
        for name in B.implementations(c["kind"]):
            if name in not_there:
                continue
            flop = B.case_flop(c)
            if name in PREFILL_TABLE and PREFILL_TABLE[name].causal_tiles == "all":  # every tile, masked
                flop *= fa_flops(c["b"], c["h"], c["s_q"], c["s_k"], 192, 128, False) / fa_flops(
                    c["b"], c["h"], c["s_q"], c["s_k"], 192, 128, True)
            call_s = KERNEL_SLACK * max(flop / H200_BF16_FLOPS, nbytes / H200_COPY_BYTES)
            total += DO_BENCH_S + PROFILER_S + 15 * call_s  # the gate's call, do_bench, 10 profiled calls
            timed += 1
    how = (f"{len(B.bench_cases(quick=True))} cases: float64 and GPU-like references on the device at "
           f"{FP64_FLOPS / 1e12:.0f} TFLOP/s + {REF_PASSES} passes over their float64 scores at "
           f"{H200_COPY_BYTES / 1e12:.1f} TB/s; {timed} (case, implementation) pairs x (do_bench {DO_BENCH_S} s + "
           f"profiler {PROFILER_S} s + 15 calls at {KERNEL_SLACK:.0f}x the roofline floor; version 1 at every "
           f"tile's FLOP); FlashAttention, FlashInfer, FlashMLA not installed there")
    return total, how


def budget(out_dir: str) -> str:
    """The budget table: each step's limit and its projected seconds on one H200, and how."""
    out = Path(out_dir)
    steps = {}
    if (out / "steps.tsv").exists():
        for line in (out / "steps.tsv").read_text().splitlines()[1:]:
            name, status, seconds, limit, compiled = (line.split("\t") + [""] * 5)[:5]
            steps[name] = dict(status=status, seconds=float(seconds or 0),
                               limit=int(limit) if limit.isdigit() else 0, compiled=compiled)
    comp = json.loads((out / "compile.json").read_text()) if (out / "compile.json").exists() else None
    host = json.loads((out / "host.json").read_text()) if (out / "host.json").exists() else None
    dry = comp["dry_run"] if comp else True
    rows = []

    def add(step, compile_s, run_s, how):
        limit = steps.get(step, {}).get("limit", 0)
        rows.append((step, limit, compile_s, run_s, how))

    add("env", 0.0, steps.get("env", {}).get("seconds", 5.0) + CUDA_INIT_S,
        f"this run's env step (imports) + {CUDA_INIT_S:.0f} s CUDA start (assumed)")
    if comp:
        secs = [r["seconds"] + r.get("build_s", 0) for r in comp["rows"]]
        first = {}
        for r in comp["rows"]:  # a worker's start: python, torch and triton imports, before its first job
            first[r["pid"]] = min(first.get(r["pid"], math.inf), r.get("ready_s", 0))
        ready = max(first.values() or [0])
        makespan = _lpt(secs, H200_CPUS)
        add("compile", comp["enumerate_s"] + ready + makespan, 0.0,
            f"measured: {comp['specializations']} specializations, sm_90 compiles (triton {comp.get('triton')}) "
            f"{sum(secs):.0f} s serial on this CPU ({comp['jobs']} jobs), longest {max(secs or [0]):.1f} s; on "
            f"{H200_CPUS} cores: makespan {makespan:.1f} s + a worker's start {ready:.1f} s + enumeration "
            f"{comp['enumerate_s']:.1f} s (same per-core speed assumed)")
        per_step = {}
        for r in comp["rows"]:
            for st in r["steps"]:
                per_step[st] = per_step.get(st, 0) + 1
    else:
        per_step = {}
    if host:
        start = host["pytest_startup_s"]
        names = {"dense": "tests", "hopper": "hopper", "sparse": "sparse", "prefill": "prefill"}
        for step, rows_h in host["steps"].items():
            h = sum(r["build_s"] + r["reference_s"] + r.get("gpu_reference_s", 0) for r in rows_h)
            k = (sum(_prefill_kernel_estimate(c) for c in P.cases()) if step == "prefill" else
                 sum(_kernel_estimate(c) for c in cases(step)))
            x = sum(r["bytes"] for r in rows_h) / H2D_BYTES
            extra = host.get("batch_invariance_build_s", 0) if step == "dense" else 0
            n_specs = per_step.get(step, 0)
            add(names[step], 0.0, start + CUDA_INIT_S + n_specs * LOAD_S + h + extra + k + x,
                f"measured here: pytest start {start:.1f} s, inputs + float64 and GPU-like references of "
                f"{len(rows_h)} input sets "
                f"{h + extra:.1f} s; assumed: CUDA start, {n_specs} kernels from the cache at {LOAD_S} s, kernels "
                f"{k:.2f} s ({KERNEL_SLACK:.0f}x roofline), copies {x:.2f} s")
    for step, hopper in (("bench", False), ("bench-gluon", True)):
        est, how = _bench_estimate(hopper)
        n_specs = per_step.get(step, 0)
        add(step, 0.0, host["pytest_startup_s"] + CUDA_INIT_S + n_specs * LOAD_S + est if host else est,
            f"model: python start + CUDA start + {n_specs} kernels from the cache + {how}")
    sb = steps.get("sparse-bench", {})
    add("sparse-bench", 0.0, float(sb.get("limit", 0)),
        f"kernels/bench_sparse.py --quick ({per_step.get('sparse-bench', 0)} kernels from the cache): not "
        f"modelled; projected at its limit, where the step is stopped")
    est, how = _prefill_bench_estimate()
    n_specs = per_step.get("prefill-bench", 0)
    add("prefill-bench", 0.0, host["pytest_startup_s"] + CUDA_INIT_S + n_specs * LOAD_S + est if host else est,
        f"model: python start + CUDA start + {n_specs} kernels from the cache + {how}")
    total = sum(c + r for _, _, c, r, _ in rows)
    limits = sum(lim for _, lim, _, _, _ in rows)
    lines = [f"## Budget for one H200 ({'projected from this dry run' if dry else 'this run'})", "",
             f"Projected total **{total:.0f} s** of the {BUDGET_S} s budget (step limits add up to {limits} s)"
             + (" -- OVER BUDGET" if total > BUDGET_S else "") + ". Compile: sm_90 compiles measured on this CPU "
             "(tests/gpu_check.py compile --dry-run); run: measured host work plus the stated assumptions "
             "(tests/gpu_check.py budget).", "",
             "| step | limit (s) | compile (s) | run (s) | projected (s) | how |", "|---|---|---|---|---|---|"]
    for step, lim, c, r, how in rows:
        flag = " **over its limit**" if lim and c + r > lim else ""
        lines.append(f"| {step} | {lim} | {c:.1f} | {r:.1f} | {c + r:.1f}{flag} | {how} |")
    lines.append("")
    text = "\n".join(lines)
    (out / "budget.md").write_text(text)
    (out / "budget.json").write_text(json.dumps(dict(total_s=round(total, 1), budget_s=BUDGET_S, limits_s=limits,
                                                     rows=[dict(step=s, limit=l, compile_s=round(c, 2),
                                                                run_s=round(r, 2), how=h) for s, l, c, r, h in rows])))
    return text


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list")
    c = sub.add_parser("compile")
    c.add_argument("path")
    c.add_argument("--dry-run", action="store_true")
    c.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    h = sub.add_parser("host")
    h.add_argument("path")
    b = sub.add_parser("budget")
    b.add_argument("out_dir")
    a = p.parse_args(argv)
    if a.cmd == "list":
        for step in STEPS:
            for case in cases(step):
                print(f"{step:7s} {case.id:45s} {case.shape.why}")
        for case in P.cases():
            print(f"prefill {case.id:45s} {case.shape.why}")
        specs, errors = specializations("cpu")
        for key, label, _, steps, _ in specs:
            print(f"spec  {label:28s} {','.join(sorted(steps))}")
        print(f"{len(specs)} specializations" + (f"; not enumerated: {errors}" if errors else ""))
    elif a.cmd == "compile":
        rec = compile_all(a.path, a.dry_run, a.jobs)
        return 1 if any(r.get("error") for r in rec["rows"]) or rec["errors"] else 0
    elif a.cmd == "host":
        host_times(a.path)
    elif a.cmd == "budget":
        text = budget(a.out_dir)
        print(text)
        total = json.loads((Path(a.out_dir) / "budget.json").read_text())["total_s"]
        return 0 if total <= BUDGET_S else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
