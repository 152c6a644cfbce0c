"""Benchmark the MLA decode versions on one CUDA GPU, in FlashMLA's test matrix.

  python kernels/bench.py --out RUN.md            full matrix (sized for under 5 minutes on an H200; not yet run)
  python kernels/bench.py --out RUN.md --quick    b=128, s_k~8K, s_q=1, h_q in {16, 128}
  python kernels/bench.py --out RUN.md --smoke    tiny cases on a CPU, in Triton's interpreter (the pipeline only)

Matrix: b = 128 sequences with lengths drawn as FlashMLA draws them, max(normal(mean,
mean/2), s_q) with no upper clip (--lengths clipped: clipped to [s_q, 2*mean] instead),
around a mean s_k in {4K, 8K, 16K, 32K}; s_q in {1, 2}, causal, h_q in {16, 64, 128},
bf16 cache and FP8 cache (656-byte rows), page_block_size 64, the tail of each sequence's
last page NaN and the unused block-table entries out of range (FlashMLA's test does the same).

Correctness before speed: every version (the launcher table, kernels.mla_decode.VERSION_TABLE;
the Gluon ones on a Hopper GPU only), the torch reference, and FlashMLA itself when
`flash_mla` imports (bf16 caches), is checked on EVERY sequence -- out and lse -- against two
references computed on the device: float64, and the GPU-like one (kernels.reference, mode
"gpu": the version's roundings of K, V and P emulated), the GPU-like one itself first held
against float64 (kernels.reference.check_against_references). Tolerances: FlashMLA's dense
decode test and rule (kernels.reference.gpu_tolerances: out abs 8e-4 or rel 2.01/128, cosine
5e-6, the abs figure scaled from FlashMLA's V rms of 0.1 to this cache's, randn: rms 1; lse abs
1e-6 or rel 8.01/65536). A version that fails is not timed, its row says why, and the run
exits with status 1 after writing its report.

Two times per row, both medians:
  call ms    the whole call, triton.testing.do_bench: launches, allocations, the combine --
             how FlashMLA's published figures (580 / 660 TFLOPS, 3000 GB/s) were taken, in the
             test of their April 2025 release (do_bench on flash_mla_with_kvcache)
  kernel ms  the GPU kernels alone, from torch.profiler -- how FlashMLA's current test times
             (kineto, the main kernel's time)
The plan of the planned versions is made once per batch, outside the timed call, as
FlashMLA's get_mla_metadata is. No host-to-device copy happens inside a call
(tests/test_kernel_batch_invariant.py checks the launches of every version).

Accounting (FlashMLA's; causal masking among the s_q rows is not subtracted):
  FLOP  = sum_i 2 * h_q * s_q * s_k[i] * (576 + 512)           = mlacourse.flops.decode_flops
  bytes = sum_i (2*h_q*s_q*576 + s_k[i]*row + 2*h_q*s_q*512)    = mlacourse.flops.decode_bytes
          with row = 1152 bytes (bf16) or 656 bytes (FP8: codes + scales + bf16 rope)
Writes --out (default: bench-<UTC time>.md in the current folder; kernels/BENCHMARKS.md only
with --update-benchmarks-md) and a roofline PNG next to it."""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys

if __package__ in (None, ""):  # run as a script: make the repository root importable first
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kernels.dims import BF16_ROW_BYTES, D_K, D_V, FP8_ROW_BYTES  # noqa: E402
from mlacourse.flops import decode_bytes, decode_flops  # noqa: E402
from mlacourse.hardware import GPUS  # noqa: E402
from mlacourse.schedule import lengths_bench, lengths_flashmla  # noqa: E402

PAGE = 64
ROW_BYTES = {"bf16": BF16_ROW_BYTES, "fp8": FP8_ROW_BYTES}


def table() -> dict:
    """The dense call's rows of the version table, kernels.mla_decode.VERSION_TABLE (imports torch
    and triton: call it lazily, so that the floors and the markdown writer work without them).
    Everything this benchmark does differently per version comes from these rows."""
    from kernels.mla_decode import VERSION_TABLE
    return {n: v for n, v in VERSION_TABLE.items() if v.call == "dense"}  # sparse decode: its own benchmark


def versions():
    """The version names of the dense call, in the table's order."""
    return tuple(table())


OTHERS = ("torch", "flashmla")  # the torch reference; FlashMLA itself when it imports
# --versions also takes these words: the versions whose row says hopper_only, and the others
GROUPS = {"hopper": lambda v: v.hopper_only, "portable": lambda v: not v.hopper_only}
SLOW_FROM_SK = 16384  # from this mean s_k on, versions with one program per query row and torch wait for --all


def expand_versions(spec: str) -> list:
    """'tiled,hopper,torch' -> ['tiled', 'gluon', 'seesaw', 'torch']: names and group words
    (GROUPS), in the order given, each once. Unknown words stay, for the caller to refuse."""
    out = []
    for word in (w.strip() for w in spec.split(",")):
        names = [n for n, v in table().items() if GROUPS[word](v)] if word in GROUPS else [word] if word else []
        out += [n for n in names if n not in out]
    return out


def _slow(version: str) -> bool:
    """Reads the cache once per query row (one program per row: its row's block_m is 1), or is
    the torch reference: skipped at long sequences unless --all."""
    return version == "torch" or (version in table() and table()[version].block_m == (1,))


def _cannot_run(version, dev, cache: str) -> str | None:
    """Why a version of the table is not timed on this device and cache (None: it is)."""
    v = table()[version]
    if not v.runs_on(dev):
        return "needs a Hopper GPU" if v.hopper_only else "cannot run on this device"
    if cache not in v.caches:
        return f"reads {' and '.join(v.caches)} caches only"
    return None
HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS_MD = os.path.join(HERE, "BENCHMARKS.md")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Benchmark the MLA decode versions (needs a CUDA GPU; --smoke: a CPU).")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="a small subset: s_k~8K, s_q=1, h_q 16 and 128")
    size.add_argument("--smoke", action="store_true",
                      help="tiny cases on a CPU in Triton's interpreter: the pipeline, not a benchmark")
    names = versions()
    p.add_argument("--versions", default=",".join(names + OTHERS),
                   help=f"comma list from {','.join(names + OTHERS)}, or the words {' and '.join(GROUPS)} "
                        f"(default: all; hopper-only versions run on Hopper only, flashmla where the flash_mla "
                        f"package imports)")
    p.add_argument("--all", action="store_true",
                   help="also time the one-row-per-program versions and torch at s_k >= 16K (slow: they read the "
                        "cache h_q*s_q times)")
    p.add_argument("--lengths", choices=("flashmla", "clipped"), default="flashmla",
                   help="flashmla: max(normal(mean, mean/2), s_q), unclipped (default); clipped: also <= 2*mean")
    p.add_argument("--b", type=int, default=None, help="sequences per batch (default 128; 3 with --smoke)")
    p.add_argument("--rep-ms", type=int, default=100, help="do_bench repetition time per measurement")
    p.add_argument("--out", default=None,
                   help="the report to write (default: bench-<UTC time>.md here); never kernels/BENCHMARKS.md "
                        "unless --update-benchmarks-md")
    p.add_argument("--update-benchmarks-md", action="store_true",
                   help="allow --out to be kernels/BENCHMARKS.md (its compile report section is kept)")
    p.add_argument("--png", default=None, help="roofline plot path (default: next to --out)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    args.versions = expand_versions(args.versions)
    bad = [v for v in args.versions if v not in names + OTHERS]
    if bad:
        p.error(f"unknown version(s) {bad}; choose from {names + OTHERS}")
    if args.b is None:
        args.b = 3 if args.smoke else 128
    if args.b < 1:
        p.error(f"--b must be >= 1, got {args.b}")
    if args.out is None:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
        args.out = f"bench-{stamp}.md"
    if os.path.realpath(args.out) == os.path.realpath(BENCHMARKS_MD) and not args.update_benchmarks_md:
        p.error("--out is kernels/BENCHMARKS.md, which holds the recorded results: write the run elsewhere and "
                "copy what it measured, or pass --update-benchmarks-md")
    if args.png is None:
        args.png = os.path.splitext(args.out)[0] + "_roofline.png"
    return args


def bench_cases(quick: bool, smoke: bool = False):
    """(cache dtype, mean s_k, s_q, h_q) in the order they run; cases sharing a cache are adjacent."""
    if smoke:  # the interpreter: a few hundred keys, one tile of heads
        return [("bf16", 96, 1, 16), ("fp8", 96, 1, 16), ("bf16", 160, 2, 16)]
    if quick:
        return [(c, 8192, 1, h) for c in ("bf16", "fp8") for h in (16, 128)]
    return [(c, sk, sq, h) for sk in (4096, 8192, 16384, 32768) for sq in (1, 2)
            for c in ("bf16", "fp8") for h in (16, 64, 128)]


def draw_lengths(rng, b: int, mean_sk: int, s_q: int, kind: str = "flashmla"):
    """Varlen batch around mean_sk (sd mean_sk/2): FlashMLA's max(normal, s_q), unclipped, or
    "clipped" to [s_q, 2*mean_sk] (mlacourse.schedule). numpy Generator in."""
    return (lengths_flashmla if kind == "flashmla" else lengths_bench)(rng, b, mean_sk, s_q)


def work(lens, s_q: int, h_q: int, cache: str):
    """FLOP and bytes of one decode call over sequences of lengths `lens` (FlashMLA's accounting)."""
    flop = sum(decode_flops(h_q, s_q, int(n), D_K, D_V) for n in lens)
    nbytes = sum(decode_bytes(h_q, s_q, int(n), D_K, D_V, kv_row_bytes=ROW_BYTES[cache]) for n in lens)
    return flop, nbytes


def render_markdown(meta: dict, rows: list, compile_table: str | None = None) -> str:
    """The report. meta: date, gpu, driver, torch, triton, command, lengths; rows: dicts with
    cache, s_k_mean, s_k_max, s_q, h_q, version, ms (None = not timed), kernel_ms, tflops,
    tbs, tflops_call, check, note."""
    failed = [r for r in rows if r.get("failed")]
    lines = ["# MLA decode benchmark", "",
             f"- date (UTC): {meta['date']}", f"- GPU: {meta['gpu']}", f"- driver: {meta['driver']}",
             f"- torch {meta['torch']}, triton {meta['triton']}, python {meta['python']}"
             + (f", flash_mla {meta['flash_mla']}" if meta.get("flash_mla") else ", flash_mla not installed"),
             f"- command: `{meta['command']}`",
             f"- correctness gate: {'**' + str(len(failed)) + ' version(s) FAILED and were not timed**' if failed else 'every timed version passed'}",
             "",
             f"b = {meta.get('b', 128)} sequences, lengths {meta.get('lengths', 'max(normal(mean, mean/2), s_q), unclipped')}, "
             "causal, page_block_size 64, the tail of each last page NaN. "
             + ("**CPU smoke run: Triton's interpreter, its tolerances (kernels.reference.INTERPRETER_OUT_TOL: "
                "it truncates bf16 stores), times are not a benchmark.** " if meta.get("smoke") else "")
             + "Before a version is timed, every "
             "sequence's out and lse are checked against a float64 reference and a GPU-like one (the "
             "version's bf16 roundings of K, V and P, emulated; it is itself checked against float64) with "
             "FlashMLA's tolerances (out: abs 8e-4 x (V rms / 0.1) -- FlashMLA's cases draw V with rms 0.1 "
             "-- or rel 2.01/128, cosine difference <= 5e-6; lse: abs 1e-6 or rel 8.01/65536, <= 1e-7); "
             "`check` gives the worst out error against float64 and the cosine difference, or why it failed. "
             "`call ms`: the whole call, triton.testing.do_bench median (FlashMLA's published figures are "
             "whole-call do_bench times); `kernel ms`: the GPU kernels alone, torch.profiler (FlashMLA's "
             "current test times its kernel the same way). TFLOPS = sum 2*h_q*s_q*s_k*(576+512) / time; "
             "TB/s = bytes / kernel time, with bytes = q + cache rows (1152 B bf16, 656 B FP8) + out, each "
             "once (FlashMLA's accounting; causal masking not subtracted).", "",
             "| cache | mean s_k | max s_k | s_q | h_q | version | call ms | kernel ms | TFLOPS (call) "
             "| TFLOPS (kernels) | TB/s (kernels) | check |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        head = (f"| {r['cache']} | {r['s_k_mean']:.0f} | {r.get('s_k_max', 0)} | {r['s_q']} | {r['h_q']} "
                f"| {r['version']} ")
        if r.get("ms") is None:
            lines.append(head + f"| not timed | | | | | {r.get('note', '')} |")
        else:
            kms = f"{r['kernel_ms']:.3f}" if r.get("kernel_ms") else "-"
            tk = f"{r['tflops']:.1f}" if r.get("kernel_ms") else "-"
            tb = f"{r['tbs']:.2f}" if r.get("kernel_ms") else "-"
            lines.append(head + f"| {r['ms']:.3f} | {kms} | {r['tflops_call']:.1f} | {tk} | {tb} "
                         f"| {r.get('check', '')} |")
    for name, v in (meta.get("never_run") or {}).items():  # versions not yet run anywhere (table: status)
        ran = any(r["version"] == name and r.get("ms") for r in rows)
        lines += ["", f"Version {v} ({name}): " + ("timed in this run." if ran else
                                                   "compiled, not yet run on a GPU (not timed in this run).")]
    if failed:
        lines += ["", "## Failed the correctness gate (not timed)", ""]
        lines += [f"- {r['cache']} s_k~{r['s_k_mean']:.0f} s_q={r['s_q']} h_q={r['h_q']} {r['version']}: "
                  f"{r.get('note', '')}" for r in failed]
    lines += ["", TARGETS_MD, "", floors_md()]
    if compile_table:
        lines += ["", "## sm_90 compile report", "", compile_table.strip()]
    return "\n".join(lines) + "\n"


TARGETS_MD = """## Targets (not results)
For b=128, s_q=1, mean s_k=8K on an H200: >= 450 TFLOPS at h_q=128 (compute-bound side) and
>= 3.6 TB/s at h_q=16 (memory-bound side). FlashMLA reports about 660 TFLOPS and 3000 GB/s on an H800."""


def floors(gpu_name: str = "H200", b: int = 128, s_k: int = 8192, s_q: int = 1, cache: str = "bf16"):
    """Roofline floor of one decode call per h_q, from datasheet peaks (a prediction, not a
    measurement): time >= max(FLOP / peak, bytes / bandwidth). Returns rows of
    (h_q, flop, bytes, compute ms, memory ms, floor ms, bound)."""
    gpu = GPUS[gpu_name]
    out = []
    for h_q in (16, 64, 128):
        flop, nbytes = work([s_k] * b, s_q, h_q, cache)
        t_c = flop / (gpu.bf16_tflops * 1e12) * 1e3
        t_m = nbytes / (gpu.hbm_gbps * 1e9) * 1e3
        out.append((h_q, flop, nbytes, t_c, t_m, max(t_c, t_m), "compute" if t_c > t_m else "memory"))
    return out


def floors_md(gpu_name: str = "H200") -> str:
    g = GPUS[gpu_name]
    lines = [f"## Floors (computed from {gpu_name} datasheet peaks: {g.bf16_tflops:g} dense bf16 TFLOPS, "
             f"{g.hbm_gbps / 1000:g} TB/s; predictions, not measurements)",
             "b=128, every sequence s_k=8192, s_q=1, bf16 cache.", "",
             "| h_q | GFLOP | GB moved | compute ms | memory ms | floor ms | bound |", "|---|---|---|---|---|---|---|"]
    for h_q, flop, nbytes, t_c, t_m, t, bound in floors(gpu_name):
        lines.append(f"| {h_q} | {flop / 1e9:.1f} | {nbytes / 1e9:.3f} | {t_c:.3f} | {t_m:.3f} | {t:.3f} | {bound} |")
    return "\n".join(lines)


def carried_compile_report(path: str):
    """The sm_90 compile report section of an existing BENCHMARKS.md (kept across runs), or None."""
    try:
        text = open(path).read()
    except OSError:
        return None
    marker = "## sm_90 compile report"
    return text.split(marker, 1)[1].strip() if marker in text else None


def plot_roofline(rows, gpu_key: str, path: str):
    """TFLOPS against FLOP/byte for each measured row, under the GPU's bf16 roof."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    gpu = GPUS.get(gpu_key)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs = np.logspace(0, 3.5, 200)
    if gpu is not None:
        ax.plot(xs, [gpu.attainable_tflops(x) for x in xs], "k-", lw=1, label=f"{gpu.name} bf16 roof (datasheet)")
    shapes = "xso^Dv<>"
    names = sorted({r["version"] for r in rows})
    markers = {v: shapes[i % len(shapes)] for i, v in enumerate(names)}
    for v in markers:
        pts = [(r["flop"] / r["bytes"], r.get("tflops") or r["tflops_call"]) for r in rows
               if r["version"] == v and r.get("ms")]
        if pts:
            ax.scatter(*zip(*pts), marker=markers[v], label=v)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte, FlashMLA accounting)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"MLA decode on {gpu_key or 'unknown GPU'}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def gpu_key(name: str):
    """'NVIDIA H200' -> 'H200' (mlacourse.hardware.GPUS key), else None."""
    for k in sorted(GPUS, key=len, reverse=True):
        if k in name:
            return k
    return None


def _driver():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
    except Exception as e:  # noqa: BLE001
        return f"unknown ({e.__class__.__name__})"


def build_cache(torch, rng, lens, dtype, device, poison: bool = True):
    """A paged cache holding sequences of `lens` on shuffled pages; returns kv_cache
    [num_blocks, 64, 1, 576], block_table [b, max_blocks] int32, cache_seqlens [b] int32.
    poison: the slots past each sequence's end hold NaN and its unused table entries
    2**31 - 1, as in FlashMLA's test -- a kernel that reads them returns NaN or faults."""
    need = [-(-int(n) // PAGE) for n in lens]
    num_blocks = max(1, sum(need))
    perm = torch.from_numpy(rng.permutation(num_blocks)).to(device=device, dtype=torch.int32)
    fill = 2**31 - 1 if poison else 0
    block_table = torch.full((len(lens), max(1, max(need))), fill, dtype=torch.int32, device=device)
    start = 0
    for i, k in enumerate(need):
        block_table[i, :k] = perm[start:start + k]
        start += k
    kv = torch.randn(num_blocks, PAGE, 1, D_K, dtype=dtype, device=device)
    if poison:
        for i, n in enumerate(lens):
            if int(n) % PAGE:
                kv[block_table[i, need[i] - 1], int(n) % PAGE:] = float("nan")
    seqlens = torch.tensor([int(n) for n in lens], dtype=torch.int32, device=device)
    return kv, block_table, seqlens


def pack_fp8_chunked(torch, kv, chunk=4096):
    from kernels.fp8 import pack_fp8_kvcache
    return torch.cat([pack_fp8_kvcache(kv[i:i + chunk]) for i in range(0, kv.shape[0], chunk)])


def kernel_time_ms(fn, reps: int = 10, device: str = "cuda") -> float:
    """Mean time per call of the kernels fn launches, from torch.profiler: the sum of the
    device kernels' own times (CUDA), without launch gaps, allocations or host work -- what
    FlashMLA reports. On a CPU (smoke tests) it sums the operators' own CPU time instead."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()  # compile and warm up outside the profile
    if device == "cuda":
        torch.cuda.synchronize()
    acts = [ProfilerActivity.CUDA] if device == "cuda" else [ProfilerActivity.CPU]
    with profile(activities=acts) as prof:
        for _ in range(reps):
            fn()
        if device == "cuda":
            torch.cuda.synchronize()
    events = prof.key_averages()
    if device == "cuda":
        total_us = sum(getattr(e, "self_device_time_total", 0) or 0 for e in events
                       if str(getattr(e, "device_type", "")).endswith("CUDA"))
    else:
        total_us = sum(e.self_cpu_time_total for e in events)
    return total_us / reps / 1e3


def exact_reference(torch, q, kvc, bt, sl, scale, fp8, device, mode="float64", operands=None):
    """out [b, s_q, h_q, 512] and lse [b, h_q, s_q] of every sequence, on the device, in chunks
    whose float64 scores stay near 1 GB (kernels.reference.reference_decode_padded). mode
    "float64": both float64; mode "gpu": the GPU-like reference for dot operands `operands`
    (out in q's dtype, lse float32)."""
    from kernels.reference import reference_decode_padded

    b, s_q, h_q = q.shape[:3]
    s_k_max = bt.shape[1] * PAGE
    chunk = max(1, min(b, int(2**30 // (8 * max(1, h_q * s_q * s_k_max + s_k_max * D_K)))))
    outs, lses = [], []
    for i in range(0, b, chunk):
        o, l_ = reference_decode_padded(q[i:i + chunk], kvc, bt[i:i + chunk], sl[i:i + chunk], softmax_scale=scale,
                                        causal=True, is_fp8_kvcache=fp8, dtype=torch.float64, exact=True, mode=mode,
                                        operands=operands)
        outs.append(o)
        lses.append(l_)
    return torch.cat(outs), torch.cat(lses)


def gate(name, out, lse, ref64, ref_gpu, interpreter: bool = False, v_rms: float = 1.0):
    """The correctness gate of one version on one case (kernels.reference.check_against_references:
    the GPU-like reference against float64 at the GPU's tolerances, the version against both at the
    GPU's or, in the interpreter, the interpreter's): (ok, text for the report)."""
    from kernels.reference import check_against_references
    checks = check_against_references(name, out, lse, ref64, ref_gpu, not interpreter, v_rms)
    bad = [c for c in checks if not c.ok]
    if not bad:
        c = checks[2]  # the version's out against float64
        return True, f"ok: max abs {c.max_abs:.1e}, cos {c.cos_diff:.1e}"
    return False, "FAILED " + bad[0].message


def flashmla_fn(flash_mla, q, kvc, bt, sl, scale):
    """FlashMLA's dense decode, for either interface: get_mla_metadata(cache_seqlens, s_q*h_q, h_kv)
    before 2025-09, get_mla_metadata() (arguments ignored, metadata made on the first call)
    after. Returns a call that gives (out, lse) with lse -inf, not +inf, for rows with no key."""
    import torch
    s_q, h_q = q.shape[1], q.shape[2]
    meta, splits = flash_mla.get_mla_metadata(sl, s_q * h_q, 1)

    def fn():
        out, lse = flash_mla.flash_mla_with_kvcache(q, kvc, bt, sl, D_V, meta, splits, softmax_scale=scale,
                                                    causal=True)
        return out, torch.where(lse == float("inf"), torch.full_like(lse, float("-inf")), lse)
    return fn


def run(args, device=None, timer=None, cases=None, kernel_timer=None):
    """Check, then time, every case; write the report and the plot. Returns the rows; a row
    with "failed" set did not pass the correctness gate and was not timed.
    device/timer/cases/kernel_timer are for the CPU smoke run and tests: a real run uses the
    GPU, triton.testing.do_bench (median), torch.profiler and bench_cases(args.quick)."""
    import numpy as np
    import torch
    import triton

    from kernels.mla_decode import mla_decode_with_kvcache
    from kernels.reference import reference_decode_padded, value_rms

    smoke = getattr(args, "smoke", False)
    if device is None:
        if smoke:
            device = "cpu"
        elif not torch.cuda.is_available():
            sys.exit("bench.py needs a CUDA GPU (torch.cuda.is_available() is False); nothing was written. "
                     "`--smoke` runs the pipeline on a CPU.")
        else:
            device = "cuda"
    dev = torch.device(device)
    if dev.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("on a CPU the kernels need Triton's interpreter: run with TRITON_INTERPRET=1 set")
    if timer is None:
        if dev.type == "cuda":
            from triton.testing import do_bench

            def timer(fn):
                return do_bench(fn, warmup=25, rep=args.rep_ms, return_mode="median")
        else:
            def timer(fn):  # the smoke run: wall time of one call, labelled as not a benchmark
                import time
                t = time.perf_counter()
                fn()
                return (time.perf_counter() - t) * 1e3
    if kernel_timer is None:
        def kernel_timer(fn):
            return kernel_time_ms(fn, reps=10 if dev.type == "cuda" else 1, device=dev.type)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU (smoke test, not a benchmark)"
    hopper = dev.type == "cuda" and torch.cuda.get_device_capability(dev)[0] == 9
    try:
        import flash_mla
    except ImportError:
        flash_mla = None
    rng = np.random.default_rng(args.seed)
    scale = 192 ** -0.5  # what DeepSeek's MLA passes
    rows, cache_key = [], None
    for cache_kind, mean_sk, s_q, h_q in (cases or bench_cases(args.quick, smoke)):
        if cache_key != (mean_sk, s_q):  # one set of lengths and pages per (s_k, s_q), shared by bf16 and FP8
            kv = kv8 = None
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            lens = draw_lengths(rng, args.b, mean_sk, s_q, args.lengths)
            kv, bt, sl = build_cache(torch, rng, lens, torch.bfloat16, dev)
            v_rms = value_rms(kv[..., :D_V])  # randn: about 1 (the poisoned tails are not counted)
            cache_key = (mean_sk, s_q)
        if cache_kind == "fp8" and kv8 is None:
            kv8 = pack_fp8_chunked(torch, kv)
        fp8 = cache_kind == "fp8"
        kvc = kv8 if fp8 else kv
        q = torch.randn(args.b, s_q, h_q, D_K, dtype=torch.bfloat16, device=dev)
        flop, nbytes = work(lens, s_q, h_q, cache_kind)
        ref64 = exact_reference(torch, q, kvc, bt, sl, scale, fp8, dev)  # every sequence, float64
        gpu_refs = {}  # the GPU-like reference per dot-operand type (bf16; float32 for version 1 and torch)

        def ref_gpu(operands):
            if operands not in gpu_refs:
                gpu_refs[operands] = exact_reference(torch, q, kvc, bt, sl, scale, fp8, dev, "gpu", operands)
            return gpu_refs[operands]
        plans = {}  # made once per batch, outside the timed call (FlashMLA's get_mla_metadata)
        for v in args.versions:
            row = dict(cache=cache_kind, s_k_mean=float(np.mean(lens)), s_k_max=int(np.max(lens)), s_q=s_q,
                       h_q=h_q, version=v, flop=flop, bytes=nbytes)
            if _slow(v) and mean_sk >= SLOW_FROM_SK and not args.all:
                rows.append(dict(row, ms=None, note="skipped (use --all)"))
                continue
            why = _cannot_run(v, dev, cache_kind) if v not in OTHERS else None
            if why:
                rows.append(dict(row, ms=None, note=why))
                continue
            if v == "flashmla" and (flash_mla is None or fp8 or not hopper):
                why = "flash_mla does not import" if flash_mla is None else "FlashMLA's dense decode: Hopper, bf16"
                rows.append(dict(row, ms=None, note=why))
                continue
            if v == "torch":
                # sequences per chunk so that the float32 scores of one chunk stay near 2 GB
                chunk = max(1, min(args.b, int(2**31 // (h_q * s_q * 2 * mean_sk * 4 * 4))))

                def fn():
                    outs, lses = [], []
                    for i in range(0, args.b, chunk):
                        o, l_ = reference_decode_padded(q[i:i + chunk], kvc, bt[i:i + chunk], sl[i:i + chunk],
                                                        softmax_scale=scale, causal=True, is_fp8_kvcache=fp8)
                        outs.append(o)
                        lses.append(l_)
                    return torch.cat(outs), torch.cat(lses)
            elif v == "flashmla":
                fn = flashmla_fn(flash_mla, q, kvc, bt, sl, scale)
            else:
                opts = {}
                if table()[v].takes_plan:  # one plan per rows-per-program, shared by the versions that take it
                    key = table()[v].plan_block_m
                    if key not in plans:
                        plans[key] = table()[v].make_plan(sl, h_q, s_q)
                    opts["plan"] = plans[key]

                def fn(v=v, opts=opts):
                    return mla_decode_with_kvcache(q, kvc, bt, sl, D_V, softmax_scale=scale, causal=True,
                                                   is_fp8_kvcache=fp8, version=v, **opts)
            try:
                out, lse = fn()
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                operands = table()[v].gpu_operands(q.dtype) if v in table() else \
                    (torch.float32 if v == "torch" else q.dtype)  # torch computes in float32; FlashMLA in bf16
                ok, check = gate(v, out, lse, ref64, ref_gpu(operands), interpreter=dev.type == "cpu", v_rms=v_rms)
            except Exception as e:  # noqa: BLE001 -- a crash is a failed version, reported, not a dead run
                ok, check = False, f"FAILED with {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
            if not ok:
                rows.append(dict(row, ms=None, failed=True, note=check))
                print(f"{cache_kind:4s} s_k~{mean_sk:6d} s_q={s_q} h_q={h_q:3d} {v:8s} NOT TIMED: {check}", flush=True)
                continue
            ms = timer(fn)
            kms = kernel_timer(fn)
            row.update(ms=ms, kernel_ms=kms, tflops_call=flop / ms / 1e9,
                       tflops=flop / kms / 1e9 if kms else None, tbs=nbytes / kms / 1e9 if kms else None,
                       check=check)
            rows.append(row)
            print(f"{cache_kind:4s} s_k~{mean_sk:6d} (max {row['s_k_max']:6d}) s_q={s_q} h_q={h_q:3d} {v:8s} "
                  f"call {ms:9.3f} ms ({row['tflops_call']:7.1f} TFLOPS), kernels {kms:9.3f} ms  {check}", flush=True)
    command = "python kernels/bench.py" + (" --quick" if args.quick else "") + (" --smoke" if smoke else "") + \
        f" --out {args.out}"
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"), gpu=name,
                driver=_driver() if dev.type == "cuda" else "-", torch=torch.__version__,
                never_run={n: v.number for n, v in table().items() if not v.interpreter and not v.gpu_verified},
                triton=triton.__version__, python=platform.python_version(), command=command, b=args.b,
                smoke=dev.type == "cpu",
                flash_mla=getattr(flash_mla, "__version__", "installed") if flash_mla is not None else None,
                lengths="max(normal(mean, mean/2), s_q), unclipped (FlashMLA's)" if args.lengths == "flashmla"
                else "normal(mean, mean/2) clipped to [s_q, 2*mean]")
    carried = carried_compile_report(args.out) if os.path.realpath(args.out) == os.path.realpath(BENCHMARKS_MD) \
        else None
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(render_markdown(meta, rows, carried))
    plot_roofline(rows, gpu_key(name), args.png)
    print(f"wrote {args.out} and {args.png}")
    return rows


def main(argv=None) -> int:
    """The command line: 0 when every version that ran passed the correctness gate, else 1."""
    if "--smoke" in (sys.argv[1:] if argv is None else argv):
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is first imported (parse_args imports it)
    args = parse_args(argv)
    rows = run(args)
    failed = [r for r in rows if r.get("failed")]
    if failed:
        print(f"{len(failed)} version(s) failed the correctness gate and were not timed; see {args.out}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
