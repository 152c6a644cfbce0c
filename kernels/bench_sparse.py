"""Benchmark sparse MLA decode (kernels/sparse_decode.py) on one CUDA GPU, in FlashMLA's sparse
decode configurations.

  python kernels/bench_sparse.py --out RUN.md            the matrix below (sized for a few minutes; not yet run)
  python kernels/bench_sparse.py --out RUN.md --quick    b 2 and 128, s_q 2, h_q 64 and 128
  python kernels/bench_sparse.py --out RUN.md --smoke    tiny shapes on a CPU, Triton's interpreter: the
                                                         correctness gate only -- nothing is timed
  python kernels/bench_sparse.py --census                no run: the sm_90 SASS of the dequantization in
                                                         the KV loop, counted (a compile, no GPU)

Matrix (FlashMLA tests/test_flash_mla_sparse_decoding.py, its V3.2 production cases): top-k
2048; per sequence s_k drawn as FlashMLA draws it, max(normal(32768, 16384), s_q); h_q 64 and
128; s_q 1 and 2; b 2, 64, 74 and 128 (b 2 leaves most SMs idle without the top-k split).
Each query token's list holds top-k distinct positions of its sequence drawn at random (fewer
where the sequence is shorter: -1 fills the rest), turned into physical rows through a block
table of shuffled 64-token pages (FlashMLA's abs_indices2indices_in_kvcache). Every cache row
that no index names holds 0xFF bytes (NaN codes, NaN scales, NaN rope): a kernel that reads
one returns NaN. Named rows hold randn values packed as FlashMLA's V3.2 656-byte rows with
power-of-two scales (mlacourse.fp8). q is randn in bf16, softmax_scale 192**-0.5.

Correctness before speed: every version with call="sparse" in kernels.mla_decode.VERSION_TABLE,
and FlashMLA's sparse decode when `flash_mla` imports (on Hopper), is checked on every query
token -- out and lse -- against two references computed on the device (kernels.reference.
reference_sparse_decode_batched: float64, and the GPU-like one that rounds K, V and P as the
kernel does), the GPU-like one first held against float64 (check_against_references), at
FlashMLA's sparse decode tolerances (out abs 1e-3 x (V rms / 0.1) or rel 2.01/128, cosine
5e-6; lse abs 1e-6 or rel 8.01/65536; kernels.reference.gpu_tolerances(v_rms, sparse=True)).
A version that fails is not timed, its row says why, and the run exits 1 after writing its
report. FlashMLA's lse = +inf for a token with no valid index is read as -inf (ours).

Two times per row, both medians, on a GPU only (kernels/bench.py's conventions):
  call ms    the whole call, triton.testing.do_bench (launches, allocations, the combine)
  kernel ms  the GPU kernels alone, from torch.profiler
Without a GPU nothing is timed, and the report says so.

Accounting (FlashMLA's tests/lib.py count_flop_and_mem_vol_for_decode):
  FLOP  = 2 * h_q * (b * s_q * top-k) * (576 + 512)    every entry of every list, -1 included
  bytes = 2*b*s_q*h_q*576 (q) + n_unique * 656 (rows) + 2*b*s_q*h_q*512 (out)
          n_unique = the distinct values in `indices` over the whole batch (FlashMLA's
          indices.unique().numel(): a -1, where present, counts as one row)
Writes --out (default: bench-sparse-<UTC time>.md here; never kernels/BENCHMARKS.md unless
--update-benchmarks-md)."""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys

if __package__ in (None, ""):  # run as a script: make the repository root importable first
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kernels.dims import D_K, D_LATENT, D_ROPE, D_V, FP8_ROW_BYTES  # noqa: E402
from mlacourse.sparse import sparse_attention_bytes, sparse_attention_flops  # noqa: E402

PAGE = 64
TOPK = 2048
MEAN_SK = 32768
SCALE = 192 ** -0.5  # what DeepSeek's MLA passes
HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS_MD = os.path.join(HERE, "BENCHMARKS.md")


def sparse_versions() -> dict:
    """The rows of the version table with call="sparse" (imports torch and triton: call lazily)."""
    from kernels.mla_decode import VERSION_TABLE
    return {n: v for n, v in VERSION_TABLE.items() if v.call == "sparse"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Benchmark sparse MLA decode (a CUDA GPU; --smoke: the correctness "
                                            "gate on a CPU, nothing timed).")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="b 2 and 128, s_q 2, h_q 64 and 128")
    size.add_argument("--smoke", action="store_true",
                      help="tiny shapes on a CPU in Triton's interpreter: the correctness gate, no times")
    size.add_argument("--census", action="store_true",
                      help="no run: compile the kernel for sm_90 (no GPU) and count the dequantization's SASS "
                           "in its KV loop (needs no TRITON_INTERPRET)")
    p.add_argument("--rep-ms", type=int, default=100, help="do_bench repetition time per measurement")
    p.add_argument("--out", default=None, help="the report (default: bench-sparse-<UTC time>.md here); never "
                                               "kernels/BENCHMARKS.md unless --update-benchmarks-md")
    p.add_argument("--update-benchmarks-md", action="store_true", help="allow --out to be kernels/BENCHMARKS.md")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.out is None:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
        args.out = f"bench-sparse-{stamp}.md"
    if os.path.realpath(args.out) == os.path.realpath(BENCHMARKS_MD) and not args.update_benchmarks_md:
        p.error("--out is kernels/BENCHMARKS.md, which holds the recorded results: write the run elsewhere and "
                "copy what it measured, or pass --update-benchmarks-md")
    return args


def bench_cases(quick: bool = False, smoke: bool = False):
    """(b, s_q, h_q, top-k, mean s_k) in the order they run."""
    if smoke:  # the interpreter: a few hundred keys, one tile of heads; the first case's lists are cut
        return [(2, 1, 16, 160, 200), (2, 2, 16, 64, 40)]
    if quick:
        return [(b, 2, h, TOPK, MEAN_SK) for b in (128, 2) for h in (128, 64)]
    return [(b, s_q, h, TOPK, MEAN_SK) for b in (2, 64, 74, 128) for s_q in (1, 2) for h in (128, 64)]


def draw_lengths(rng, b: int, mean_sk: int, s_q: int):
    """FlashMLA's varlen draw, max(normal(mean, mean/2), s_q) (kernels.bench.draw_lengths)."""
    from kernels.bench import draw_lengths as dense_draw
    return dense_draw(rng, b, mean_sk, s_q, "flashmla")


def build_case(torch, rng, b: int, s_q: int, h_q: int, topk: int, mean_sk: int, device):
    """One batch: q [b, s_q, h_q, 576] bf16, cache uint8 [num_blocks, 64, 1, 656] (rows no index
    names: 0xFF), indices int32 [b, s_q, topk], the lengths, and V's rms. Everything on `device`,
    drawn from `rng` (a numpy Generator) and a torch generator seeded from it."""
    from kernels.fp8 import pack_fp8_rows

    lens = draw_lengths(rng, b, mean_sk, s_q)
    need = [-(-int(n) // PAGE) for n in lens]
    num_blocks = max(1, sum(need))
    perm = torch.from_numpy(rng.permutation(num_blocks)).to(device=device, dtype=torch.int64)
    table = torch.zeros(b, max(1, max(need)), dtype=torch.int64, device=device)
    start = 0
    for i, k in enumerate(need):
        table[i, :k] = perm[start:start + k]
        start += k
    gen = torch.Generator(device=device).manual_seed(int(rng.integers(2**31)))
    n_tok = torch.tensor([int(n) for n in lens], device=device).repeat_interleave(s_q)  # [b*s_q]
    width = max(int(max(lens)), topk)
    rand = torch.rand(b * s_q, width, generator=gen, device=device)
    pos_all = torch.arange(width, device=device)
    rand = rand.masked_fill(pos_all[None, :] >= n_tok[:, None], -1.0)  # out of the sequence: chosen last
    pos = rand.topk(topk, dim=-1).indices  # [b*s_q, topk] distinct positions, the sequence's first
    pos = torch.where(pos < n_tok[:, None], pos, torch.full_like(pos, -1))
    seq = torch.arange(b, device=device).repeat_interleave(s_q)[:, None]  # [b*s_q, 1]
    safe = pos.clamp_min(0)
    phys = table[seq, safe // PAGE] * PAGE + safe % PAGE
    indices = torch.where(pos >= 0, phys, torch.full_like(phys, -1)).reshape(b, s_q, topk).to(torch.int32)
    cache = torch.full((num_blocks * PAGE, FP8_ROW_BYTES), 0xFF, dtype=torch.uint8, device=device)
    used = torch.unique(indices[indices >= 0].long())
    values = torch.randn(used.numel(), D_K, generator=gen, device=device)  # [n, 576] float32
    for i in range(0, used.numel(), 65536):  # packing works in float64: chunks keep it small
        v = values[i:i + 65536]
        cache[used[i:i + 65536]] = pack_fp8_rows(v[:, :D_LATENT], v[:, D_LATENT:D_LATENT + D_ROPE])
    v_rms = float(values[:, :D_V].pow(2).mean().sqrt()) if used.numel() else 1.0
    q = torch.randn(b, s_q, h_q, D_K, generator=gen, device=device).to(torch.bfloat16)
    return q, cache.reshape(num_blocks, PAGE, 1, FP8_ROW_BYTES), indices, lens, v_rms


def work(indices, h_q: int):
    """FLOP and bytes of one call, as FlashMLA counts them (module docstring). indices: a torch
    tensor [b, s_q, topk]."""
    import torch
    b, s_q, topk = indices.shape
    n_unique = int(torch.unique(indices).numel())
    flop = b * sparse_attention_flops(h_q, s_q, topk)
    nbytes = b * sparse_attention_bytes(h_q, s_q, 0) + n_unique * FP8_ROW_BYTES
    return flop, nbytes


def gate(name, out, lse, ref64, ref_gpu, interpreter: bool, v_rms: float):
    """The correctness gate of one version on one case: (ok, text for the report)."""
    from kernels.reference import check_against_references
    checks = check_against_references(name, out, lse, ref64, ref_gpu, not interpreter, v_rms, sparse=True)
    bad = [c for c in checks if not c.ok]
    if not bad:
        c = checks[2]  # the version's out against float64
        return True, f"ok: max abs {c.max_abs:.1e}, cos {c.cos_diff:.1e}"
    return False, "FAILED " + bad[0].message


def flashmla_sparse_fn(flash_mla, q, cache, indices, scale):
    """FlashMLA's sparse decode through its current interface (get_mla_metadata() with no
    arguments, the metadata made on the first call): a call giving (out, lse), lse +inf -> -inf."""
    import torch
    meta, _ = flash_mla.get_mla_metadata()

    def fn():
        out, lse = flash_mla.flash_mla_with_kvcache(q, cache, None, None, D_V, meta, None, softmax_scale=scale,
                                                    causal=False, is_fp8_kvcache=True, indices=indices)
        return out, torch.where(lse == float("inf"), torch.full_like(lse, float("-inf")), lse)
    return fn


# The SASS of the FP8 dequantization in the KV loop (sm_90, triton 3.9): e4m3 pairs to f16
# pairs, each f16 to f32, the scale multiply (an FMUL, counted apart: the loop has other
# FMULs), fp32 pairs to bf16 pairs (also P's conversion before P V)
CONVERSIONS = ("F2FP.F16.E4M3.UNPACK_B", "HADD2.F32", "F2FP.BF16.F32.PACK_AB")


def dequant_census(h_q: int = 128, b: int = 64, s_q: int = 1) -> dict:
    """Compile the sparse kernel's GPU launch for this shape for sm_90 (no GPU needed; not under
    TRITON_INTERPRET) and count its KV loop's SASS instructions per thread per tile: the
    conversion instructions of the dequantization against the whole loop. With h_q > BLOCK_M
    every program of a query token repeats them on the same rows (kernels/sparse_decode.py)."""
    import collections
    import re

    import torch

    from kernels import compile_report as cr
    from kernels.sparse_decode import prepare

    q = torch.zeros(b, s_q, h_q, D_K, dtype=torch.bfloat16)
    kv = torch.zeros(4, PAGE, 1, FP8_ROW_BYTES, dtype=torch.uint8)
    idx = torch.zeros(b, s_q, TOPK, dtype=torch.int32)
    launch = prepare(q, kv, idx, gpu=True, check_indices=False, num_splits=1)[0][0]
    kernel, _ = cr.compile_launch(launch)
    found = cr.kv_loop(cr.sass_of(kernel)[0] or "", cr.SASS)  # (text, instructions, labels)
    if found is None:
        raise RuntimeError("no KV loop found in the SASS (no cuobjdump in this triton?)")
    ops = collections.Counter()
    for line in found[1]:  # "<control codes>\t[@predicate ]OPCODE.MODIFIERS operands;"
        m = re.match(r"(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_x]+)*)", line.split("\t")[-1].strip())
        if m:
            ops[m.group(1)] += 1
    block_m, block_n = launch.block_shape
    return dict(block_m=block_m, block_n=block_n, threads=32 * launch.num_warps, heads_programs=-(-h_q // block_m),
                instructions=len(found[1]), conversions={k: ops[k] for k in CONVERSIONS},
                fmul=ops["FMUL"], hgmma=sum(v for k, v in ops.items() if k.startswith("HGMMA")))


def census_lines(c: dict) -> list:
    """The census in words, per tile and per cache row."""
    conv = sum(c["conversions"].values())
    per_row = (conv + c["block_n"] * 512 // c["threads"]) * c["threads"] / c["block_n"]  # + one scale FMUL per value
    return [f"KV loop of the sparse kernel, BLOCK_M={c['block_m']} x BLOCK_N={c['block_n']}, {c['threads']} threads: "
            f"{c['instructions']} SASS instructions per thread per tile, {c['hgmma']} HGMMA",
            "conversions per thread per tile: " + ", ".join(f"{k} {v}" for k, v in c["conversions"].items())
            + f" ({conv}, {conv / c['instructions']:.0%} of the loop), and one FMUL per value for the scale "
              f"({c['block_n'] * 512 // c['threads']} of the loop's {c['fmul']} FMUL)",
            f"per cache row and program: {per_row:.0f} thread-instructions of dequantization "
            f"({per_row / 512:.1f} per latent value); {c['heads_programs']} programs per query token at "
            f"h_q={c['heads_programs'] * c['block_m']} each repeat them on the same rows"]


def render_markdown(meta: dict, rows: list) -> str:
    """The report, in kernels/bench.py's conventions. rows: dicts with b, s_q, h_q, topk, s_k_mean,
    version, splits, ms (None: not timed), kernel_ms, tflops_call, tflops, tbs, check, note, failed."""
    failed = [r for r in rows if r.get("failed")]
    gpu = meta.get("on_gpu", False)
    lines = ["# Sparse MLA decode benchmark", "",
             f"- date (UTC): {meta['date']}", f"- GPU: {meta['gpu']}", f"- driver: {meta['driver']}",
             f"- torch {meta['torch']}, triton {meta['triton']}, python {meta['python']}"
             + (f", flash_mla {meta['flash_mla']}" if meta.get("flash_mla") else ", flash_mla not installed"),
             f"- command: `{meta['command']}`",
             "- correctness gate: " + (f"**{len(failed)} row(s) FAILED and were not timed**" if failed
                                       else "every checked row passed"),
             "- times: " + ("medians on the GPU above" if gpu else
                            "**none: no GPU in this run (Triton's interpreter checks correctness only)**"),
             "",
             "FP8 rows (656 B, power-of-two scales), page 64, top-k lists of distinct random positions "
             "(-1 where a sequence is shorter), every row no index names poisoned. Before a row is timed, "
             "every query token's out and lse are checked against a float64 reference and a GPU-like one "
             "(the kernel's bf16 roundings of K, V and P, emulated; itself checked against float64) with "
             "FlashMLA's sparse decode tolerances (out: abs 1e-3 x (V rms / 0.1) or rel 2.01/128, cosine "
             "<= 5e-6; lse: abs 1e-6 or rel 8.01/65536). `splits`: pieces per top-k list (the kernel's "
             "split at small batches). TFLOPS = 2*h_q*b*s_q*topk*(576+512) / time; TB/s = (q + distinct "
             "rows * 656 + out) / kernel time (FlashMLA's accounting).", "",
             "| b | s_q | h_q | top-k | mean s_k | version | splits | call ms | kernel ms | TFLOPS (call) "
             "| TFLOPS (kernels) | TB/s (kernels) | check |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        head = (f"| {r['b']} | {r['s_q']} | {r['h_q']} | {r['topk']} | {r['s_k_mean']:.0f} | {r['version']} "
                f"| {r.get('splits', '-')} ")
        if r.get("ms") is None:
            lines.append(head + f"| not timed | | | | | {r.get('note', '')} |")
        else:
            kms = f"{r['kernel_ms']:.3f}" if r.get("kernel_ms") else "-"
            tk = f"{r['tflops']:.1f}" if r.get("kernel_ms") else "-"
            tb = f"{r['tbs']:.2f}" if r.get("kernel_ms") else "-"
            lines.append(head + f"| {r['ms']:.3f} | {kms} | {r['tflops_call']:.1f} | {tk} | {tb} "
                         f"| {r.get('check', '')} |")
    if failed:
        lines += ["", "## Failed the correctness gate (not timed)", ""]
        lines += [f"- b={r['b']} s_q={r['s_q']} h_q={r['h_q']} {r['version']}: {r.get('note', '')}" for r in failed]
    lines += ["", "For comparison, published (not ours): FlashMLA's FP8 sparse decode kernel reaches 410 TFLOPS "
              "at b=128, s_q=2, h_q=128, top-k 2048 on an H800 SXM5 (docs/20250929-hopper-fp8-sparse-deep-dive.md)."]
    return "\n".join(lines) + "\n"


def run(args, device=None, timer=None, kernel_timer=None, cases=None):
    """Check, then (on a GPU) time, every case; write the report. Returns the rows; a row with
    "failed" set did not pass the gate. device/timer/kernel_timer/cases are for tests: a real
    run uses the GPU, do_bench (median), torch.profiler and bench_cases(args.quick)."""
    import numpy as np
    import torch
    import triton

    from kernels.bench import _driver, kernel_time_ms
    from kernels.launch import interpreting
    from kernels.reference import reference_sparse_decode_batched
    from kernels.sparse_decode import prepare

    smoke = getattr(args, "smoke", False)
    if device is None:
        if smoke:
            device = "cpu"
        elif not torch.cuda.is_available():
            sys.exit("bench_sparse.py needs a CUDA GPU (torch.cuda.is_available() is False); nothing was written. "
                     "`--smoke` runs the correctness gate on a CPU.")
        else:
            device = "cuda"
    dev = torch.device(device)
    on_gpu = dev.type == "cuda"
    if not on_gpu and not interpreting():
        sys.exit("on a CPU the kernel needs Triton's interpreter: run with TRITON_INTERPRET=1 set")
    if on_gpu and timer is None:
        from triton.testing import do_bench

        def timer(fn):
            return do_bench(fn, warmup=25, rep=args.rep_ms, return_mode="median")
    if on_gpu and kernel_timer is None:
        def kernel_timer(fn):
            return kernel_time_ms(fn, reps=10, device="cuda")
    hopper = on_gpu and torch.cuda.get_device_capability(dev)[0] == 9
    try:
        import flash_mla
    except ImportError:
        flash_mla = None
    rng = np.random.default_rng(args.seed)
    versions = sparse_versions()
    rows = []
    for b, s_q, h_q, topk, mean_sk in (cases or bench_cases(getattr(args, "quick", False), smoke)):
        if on_gpu:
            torch.cuda.empty_cache()
        q, cache, idx, lens, v_rms = build_case(torch, rng, b, s_q, h_q, topk, mean_sk, dev)
        flop, nbytes = work(idx, h_q)
        ref64 = reference_sparse_decode_batched(q, cache, idx, SCALE)
        gpu_refs = {}
        base = dict(b=b, s_q=s_q, h_q=h_q, topk=topk, s_k_mean=float(np.mean(lens)), flop=flop, bytes=nbytes)
        runs = [(name, v) for name, v in versions.items()] + [("flashmla", None)]
        for name, v in runs:
            row = dict(base, version=name)
            if v is None:  # FlashMLA itself
                if flash_mla is None or not hopper:
                    rows.append(dict(row, ms=None, note="flash_mla does not import" if flash_mla is None
                                     else "FlashMLA's sparse decode: Hopper only"))
                    continue
                operands, fn = q.dtype, flashmla_sparse_fn(flash_mla, q, cache, idx, SCALE)
            else:
                if not v.runs_on(dev):
                    rows.append(dict(row, ms=None, note="cannot run on this device"))
                    continue
                launches = prepare(q, cache, idx, softmax_scale=SCALE, launcher=v.launch)[0]
                row["splits"] = launches[0].grid[2] if launches and len(launches[0].grid) > 2 else 1
                operands = v.gpu_operands(q.dtype)

                def fn(v=v):
                    found, out, lse = prepare(q, cache, idx, softmax_scale=SCALE, launcher=v.launch)
                    for launch in found:
                        launch()
                    return out, lse
            if operands not in gpu_refs:
                gpu_refs[operands] = reference_sparse_decode_batched(q, cache, idx, SCALE, mode="gpu",
                                                                     operands=operands)
            try:
                out, lse = fn()
                if on_gpu:
                    torch.cuda.synchronize()
                ok, check = gate(name, out, lse, ref64, gpu_refs[operands], not on_gpu, v_rms)
            except Exception as e:  # noqa: BLE001 -- a crash is a failed row, reported, not a dead run
                ok, check = False, f"FAILED with {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
            if not ok:
                rows.append(dict(row, ms=None, failed=True, note=check))
                print(f"b={b:3d} s_q={s_q} h_q={h_q:3d} {name:8s} NOT TIMED: {check}", flush=True)
                continue
            if not on_gpu:
                rows.append(dict(row, ms=None, check=check, note=f"{check}; not timed: no GPU"))
                print(f"b={b:3d} s_q={s_q} h_q={h_q:3d} {name:8s} {check} (no GPU: not timed)", flush=True)
                continue
            ms = timer(fn)
            kms = kernel_timer(fn)
            row.update(ms=ms, kernel_ms=kms, tflops_call=flop / ms / 1e9, tflops=flop / kms / 1e9 if kms else None,
                       tbs=nbytes / kms / 1e9 if kms else None, check=check)
            rows.append(row)
            print(f"b={b:3d} s_q={s_q} h_q={h_q:3d} {name:8s} splits {row.get('splits', '-')} call {ms:8.3f} ms "
                  f"({row['tflops_call']:6.1f} TFLOPS), kernels {kms:8.3f} ms  {check}", flush=True)
    command = "python kernels/bench_sparse.py" + (" --quick" if getattr(args, "quick", False) else "") + \
        (" --smoke" if smoke else "") + f" --out {args.out}"
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
                gpu=torch.cuda.get_device_name(dev) if on_gpu else "none (CPU, Triton's interpreter)",
                driver=_driver() if on_gpu else "-", torch=torch.__version__, triton=triton.__version__,
                python=platform.python_version(), command=command, on_gpu=on_gpu,
                flash_mla=getattr(flash_mla, "__version__", "installed") if flash_mla is not None else None)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(render_markdown(meta, rows))
    print(f"wrote {args.out}")
    return rows


def main(argv=None) -> int:
    """The command line: 0 when every row that ran passed the correctness gate, else 1."""
    if "--smoke" in (sys.argv[1:] if argv is None else argv):
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is first imported
    args = parse_args(argv)
    if args.census:
        print("\n".join(census_lines(dequant_census())))
        return 0
    rows = run(args)
    failed = [r for r in rows if r.get("failed")]
    if failed:
        print(f"{len(failed)} row(s) failed the correctness gate and were not timed; see {args.out}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
