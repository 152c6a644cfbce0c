"""Benchmark the MLA decode versions on one CUDA GPU, in FlashMLA's test matrix.

  python kernels/bench.py            full matrix (sized to finish within 5 minutes on an H200; not yet run)
  python kernels/bench.py --quick    b=128, s_k~8K, s_q=1, h_q in {16, 128}

Matrix: b = 128 sequences with lengths drawn as FlashMLA draws them, max(normal(mean,
mean/2), s_q) with no upper clip (--lengths clipped: the first edition's clip to 2*mean),
around a mean s_k in {4K, 8K, 16K, 32K}; s_q in {1, 2}, causal, h_q in {16, 64, 128},
bf16 cache and FP8 cache (656-byte rows), page_block_size 64. Each row reports the mean
and the max s_k of its batch.

Every version in the launcher table (kernels.mla_decode.VERSION_TABLE; gluon only on a
Hopper GPU) plus the torch reference, side by side in the same run, each checked against
the reference on a few sequences before it is timed. Two times per row:
  ms         the whole call, triton.testing.do_bench (median after warm-up): launches,
             allocations and the combine included
  kernel ms  the GPU kernels alone, from torch.profiler (what FlashMLA reports)
The plan of the planned versions is made once per batch, outside the timed call, as
FlashMLA's get_mla_metadata is.

Accounting (FlashMLA's; causal masking among the s_q rows is not subtracted):
  FLOP  = sum_i 2 * h_q * s_q * s_k[i] * (576 + 512)           = mlacourse.flops.decode_flops
  bytes = sum_i (2*h_q*s_q*576 + s_k[i]*row + 2*h_q*s_q*512)    = mlacourse.flops.decode_bytes
          with row = 1152 bytes (bf16) or 656 bytes (FP8: codes + scales + bf16 rope)
Writes kernels/BENCHMARKS.md (or --out) and a roofline PNG next to it."""
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


def versions():
    """The version names of the launcher table (imports torch and triton: call it lazily, so
    that the floors and the markdown writer work without them)."""
    from kernels.mla_decode import VERSION_TABLE
    return tuple(VERSION_TABLE)


PLANNED = ("planned", "gluon")  # versions that take a plan
SLOW_FROM_SK = 16384  # naive and torch are skipped from this mean s_k on unless --all
HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Benchmark the Triton MLA decode kernel (needs a CUDA GPU).")
    p.add_argument("--quick", action="store_true", help="a small subset: s_k~8K, s_q=1, h_q 16 and 128")
    names = versions()
    p.add_argument("--versions", default=",".join(names + ("torch",)),
                   help=f"comma list from {','.join(names)},torch (default: all; gluon runs on Hopper only)")
    p.add_argument("--all", action="store_true",
                   help="also time naive and torch at s_k >= 16K (slow: naive reads the cache h_q*s_q times)")
    p.add_argument("--lengths", choices=("flashmla", "clipped"), default="flashmla",
                   help="flashmla: max(normal(mean, mean/2), s_q), unclipped (default); clipped: also <= 2*mean")
    p.add_argument("--b", type=int, default=128)
    p.add_argument("--rep-ms", type=int, default=100, help="do_bench repetition time per measurement")
    p.add_argument("--out", default=os.path.join(HERE, "BENCHMARKS.md"))
    p.add_argument("--png", default=None, help="roofline plot path (default: next to --out)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    args.versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    bad = [v for v in args.versions if v not in names + ("torch",)]
    if bad:
        p.error(f"unknown version(s) {bad}; choose from {names + ('torch',)}")
    if args.png is None:
        args.png = os.path.splitext(args.out)[0] + "_roofline.png"
    return args


def bench_cases(quick: bool):
    """(cache dtype, mean s_k, s_q, h_q) in the order they run; cases sharing a cache are adjacent."""
    if quick:
        return [(c, 8192, 1, h) for c in ("bf16", "fp8") for h in (16, 128)]
    return [(c, sk, sq, h) for sk in (4096, 8192, 16384, 32768) for sq in (1, 2)
            for c in ("bf16", "fp8") for h in (16, 64, 128)]


def draw_lengths(rng, b: int, mean_sk: int, s_q: int, kind: str = "flashmla"):
    """Varlen batch around mean_sk (sd mean_sk/2): FlashMLA's max(normal, s_q), unclipped, or
    the first edition's clip to [s_q, 2*mean_sk] (mlacourse.schedule). numpy Generator in."""
    return (lengths_flashmla if kind == "flashmla" else lengths_bench)(rng, b, mean_sk, s_q)


def work(lens, s_q: int, h_q: int, cache: str):
    """FLOP and bytes of one decode call over sequences of lengths `lens` (FlashMLA's accounting)."""
    flop = sum(decode_flops(h_q, s_q, int(n), D_K, D_V) for n in lens)
    nbytes = sum(decode_bytes(h_q, s_q, int(n), D_K, D_V, kv_row_bytes=ROW_BYTES[cache]) for n in lens)
    return flop, nbytes


def render_markdown(meta: dict, rows: list, compile_table: str | None = None) -> str:
    """BENCHMARKS.md text. meta: date, gpu, driver, torch, triton, command, peak/roofline notes.
    rows: dicts with cache, s_k_mean, s_k_max, s_q, h_q, version, ms (None = not run), kernel_ms,
    tflops, tbs, check."""
    lines = ["# MLA decode benchmark", "",
             f"- date (UTC): {meta['date']}", f"- GPU: {meta['gpu']}", f"- driver: {meta['driver']}",
             f"- torch {meta['torch']}, triton {meta['triton']}, python {meta['python']}",
             f"- command: `{meta['command']}`", "",
             f"b = 128 sequences, lengths {meta.get('lengths', 'max(normal(mean, mean/2), s_q), unclipped')}, "
             "causal, page_block_size 64. `ms`: the whole call, triton.testing.do_bench median after warm-up; "
             "`kernel ms`: the GPU kernels alone (torch.profiler), as FlashMLA reports. "
             "TFLOPS and TB/s use the kernel time: TFLOPS = sum 2*h_q*s_q*s_k*(576+512) / time; TB/s = bytes / "
             "time, with bytes = q + cache rows (1152 B bf16, 656 B FP8) + out, each once (FlashMLA's accounting; "
             "causal masking not subtracted). `check` is the max abs error of out against the float32 torch "
             "reference on the first sequences.", "",
             "| cache | mean s_k | max s_k | s_q | h_q | version | ms | kernel ms | TFLOPS | TB/s | check |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        head = (f"| {r['cache']} | {r['s_k_mean']:.0f} | {r.get('s_k_max', 0)} | {r['s_q']} | {r['h_q']} "
                f"| {r['version']} ")
        if r.get("ms") is None:
            lines.append(head + f"| not run | | | | {r.get('note', '')} |")
        else:
            kms = f"{r['kernel_ms']:.3f}" if r.get("kernel_ms") else "-"
            lines.append(head + f"| {r['ms']:.3f} | {kms} | {r['tflops']:.1f} | {r['tbs']:.2f} "
                         f"| {r.get('check', '')} |")
    gluon_ran = any(r["version"] == "gluon" and r.get("ms") for r in rows)
    lines += ["", "Version 5 (gluon): " + ("timed in this run." if gluon_ran else
                                          "compiled, not yet run on a GPU (not timed in this run).")]
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
        pts = [(r["flop"] / r["bytes"], r["tflops"]) for r in rows if r["version"] == v and r.get("ms")]
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


def build_cache(torch, rng, lens, dtype, device):
    """A paged bf16 cache holding sequences of `lens` on shuffled pages; returns
    kv_cache [num_blocks, 64, 1, 576], block_table [b, max_blocks] int32, cache_seqlens [b] int32."""
    need = [-(-int(n) // PAGE) for n in lens]
    num_blocks = sum(need)
    perm = torch.from_numpy(rng.permutation(num_blocks)).to(device=device, dtype=torch.int32)
    block_table = torch.zeros(len(lens), max(need), dtype=torch.int32, device=device)
    start = 0
    for i, k in enumerate(need):
        block_table[i, :k] = perm[start:start + k]
        start += k
    kv = torch.randn(num_blocks, PAGE, 1, D_K, dtype=dtype, device=device)
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


def run(args, device=None, timer=None, cases=None, kernel_timer=None):
    """Build, check and time every case; write the markdown and the plot.
    device/timer/cases/kernel_timer are for the CPU smoke test only: a real run uses the GPU,
    triton.testing.do_bench (median), torch.profiler and bench_cases(args.quick)."""
    import numpy as np
    import torch
    import triton

    from kernels.mla_decode import mla_decode_with_kvcache
    from kernels.plan import mla_decode_plan
    from kernels.reference import reference_decode_padded

    if device is None:
        if not torch.cuda.is_available():
            sys.exit("bench.py needs a CUDA GPU (torch.cuda.is_available() is False); nothing was written.")
        device = "cuda"
    if timer is None:
        from triton.testing import do_bench

        def timer(fn):
            return do_bench(fn, warmup=25, rep=args.rep_ms, return_mode="median")
    dev = torch.device(device)
    if kernel_timer is None:
        def kernel_timer(fn):
            return kernel_time_ms(fn, device=dev.type)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU (smoke test, not a benchmark)"
    hopper = dev.type == "cuda" and torch.cuda.get_device_capability(dev)[0] == 9
    rng = np.random.default_rng(args.seed)
    scale = 192 ** -0.5  # what DeepSeek's MLA passes
    rows, cache_key = [], None
    for cache_kind, mean_sk, s_q, h_q in (cases or bench_cases(args.quick)):
        if cache_key != (mean_sk, s_q):  # one set of lengths and pages per (s_k, s_q), shared by bf16 and FP8
            kv = kv8 = None
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            lens = draw_lengths(rng, args.b, mean_sk, s_q, args.lengths)
            kv, bt, sl = build_cache(torch, rng, lens, torch.bfloat16, dev)
            cache_key = (mean_sk, s_q)
        if cache_kind == "fp8" and kv8 is None:
            kv8 = pack_fp8_chunked(torch, kv)
        fp8 = cache_kind == "fp8"
        kvc = kv8 if fp8 else kv
        q = torch.randn(args.b, s_q, h_q, D_K, dtype=torch.bfloat16, device=dev)
        flop, nbytes = work(lens, s_q, h_q, cache_kind)
        n_chk = min(2, args.b)
        ref_o, _ = reference_decode_padded(q[:n_chk], kvc, bt[:n_chk], sl[:n_chk], softmax_scale=scale,
                                           causal=True, is_fp8_kvcache=fp8)
        plans = {}  # made once per batch, outside the timed call (FlashMLA's get_mla_metadata)
        for v in args.versions:
            row = dict(cache=cache_kind, s_k_mean=float(np.mean(lens)), s_k_max=int(np.max(lens)), s_q=s_q,
                       h_q=h_q, version=v, flop=flop, bytes=nbytes)
            if v in ("naive", "torch") and mean_sk >= SLOW_FROM_SK and not args.all:
                rows.append(dict(row, ms=None, note="skipped (use --all)"))
                continue
            if v == "gluon" and (fp8 or not hopper):
                rows.append(dict(row, ms=None, note="needs a Hopper GPU and a bf16 cache"))
                continue
            if v == "torch":
                # sequences per chunk so that the float32 scores of one chunk stay near 2 GB
                chunk = max(1, min(args.b, int(2**31 // (h_q * s_q * 2 * mean_sk * 4 * 4))))

                def fn():
                    for i in range(0, args.b, chunk):
                        reference_decode_padded(q[i:i + chunk], kvc, bt[i:i + chunk], sl[i:i + chunk],
                                                softmax_scale=scale, causal=True, is_fp8_kvcache=fp8)
                check = "reference"
            else:
                opts = {}
                if v in PLANNED:
                    block_m = 64 if v == "gluon" else None
                    if block_m not in plans:
                        plans[block_m] = mla_decode_plan(sl, h_q, s_q, block_m=block_m)
                    opts["plan"] = plans[block_m]

                def fn(v=v, opts=opts):
                    return mla_decode_with_kvcache(q, kvc, bt, sl, D_V, softmax_scale=scale, causal=True,
                                                   is_fp8_kvcache=fp8, version=v, **opts)
                out, _ = fn()
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                err = (out[:n_chk].float() - ref_o.float()).abs().max().item()
                check = f"{err:.2e}" + ("" if err < 5e-2 else " FAIL")
            ms = timer(fn)
            kms = kernel_timer(fn)
            t = kms if kms else ms  # rates from the kernels' own time, as FlashMLA reports them
            row.update(ms=ms, kernel_ms=kms, tflops=flop / t / 1e9, tbs=nbytes / t / 1e9, check=check)
            rows.append(row)
            print(f"{cache_kind:4s} s_k~{mean_sk:6d} (max {row['s_k_max']:6d}) s_q={s_q} h_q={h_q:3d} {v:8s} "
                  f"{ms:9.3f} ms (kernels {kms:9.3f} ms) {row['tflops']:7.1f} TFLOPS {row['tbs']:6.2f} TB/s  "
                  f"check {check}", flush=True)
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"), gpu=name,
                driver=_driver() if dev.type == "cuda" else "-", torch=torch.__version__,
                triton=triton.__version__, python=platform.python_version(),
                command="python kernels/bench.py" + (" --quick" if args.quick else ""),
                lengths="max(normal(mean, mean/2), s_q), unclipped (FlashMLA's)" if args.lengths == "flashmla"
                else "normal(mean, mean/2) clipped to [s_q, 2*mean]")
    with open(args.out, "w") as f:
        f.write(render_markdown(meta, rows, carried_compile_report(args.out)))
    plot_roofline(rows, gpu_key(name), args.png)
    print(f"wrote {args.out} and {args.png}")
    return rows


if __name__ == "__main__":
    run(parse_args())
