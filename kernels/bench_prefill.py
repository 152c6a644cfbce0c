"""Benchmark MLA prefill (chapter 9) on one CUDA GPU: the expand path's attention (kernels/mla_prefill.py)
beside torch's SDPA, FlashAttention 2 / 3 and FlashInfer where they import; the chunked prefix context
(kernels/prefill_context.py); the absorbed sparse prefill (kernels/sparse_prefill.py) beside FlashMLA's.

  python kernels/bench_prefill.py --out RUN.md            the matrix below (sized for a few minutes; not yet run)
  python kernels/bench_prefill.py --out RUN.md --quick    the target case, one extend, one prefix, one sparse
  python kernels/bench_prefill.py --out RUN.md --smoke    tiny shapes on a CPU, Triton's interpreter: the
                                                          correctness gate only -- nothing is timed

Matrix (h = 128, V3's heads; bf16; q, k, v drawn from randn):
  expand  fresh prompts of 16K tokens in all, FlashAttention 3's benchmark shapes (hopper/benchmark_attn.py:
          batch x seqlen = (8, 2K), (4, 4K), (2, 8K), (1, 16K)), causal; one extend (2K new tokens after a
          30K-token prefix, the keys given expanded); the key rows after the last sequence NaN.
  prefix  the chunked prefix context: 2K new tokens after a 30K-token prefix, and 4 x 1K after 8K each,
          from a paged bf16 latent cache (pages of 64, the tail of each last page NaN), chunk_tokens 4,096.
  sparse  FlashMLA's sparse prefill shapes (tests/test-sparse-prefill.py's performance cases, V3.2's
          576-wide rows): s_q 4,096 query tokens, s_kv 8K and 32K bf16 rows, top-k 2,048 distinct random
          rows each, h_q 128 and 64.

Correctness before speed: every implementation is checked on every query row, out and lse, against
two references computed on the device (kernels.reference, *_batched: float64, and the GPU-like one
that rounds where a GPU kernel rounds), the GPU-like one first held against float64
(check_against_references), at FlashMLA's prefill tolerances (kind "prefill": its dense MHA prefill,
out abs 1e-3 x (V rms / 0.1) or rel 8.01/128, cosine 7e-6, lse abs 1e-6 or rel 2.01/65536; kind
"sparse_prefill": its sparse prefill, out abs 8e-4 x (V rms / 0.1) or rel 3.01/128, cosine 1e-5). The
prefix path's float64 reference is the exact math of the bf16 K and V its dots take (the expansion
rounded to bf16, as a GPU's tensor cores need it; tests/test_kernel_prefill_context.py bounds what
that rounding costs). An implementation that returns no lse (SDPA) is checked on out. One that
fails is not timed, its row says why, and the run exits 1 after writing its report. A library
that raises on the call (FlashAttention 2 takes no d_v != d_qk, for one) did not run: its row says so,
and that fails nothing; a library that runs and misses the references fails like ours.

Two times per row, both medians, on a GPU only (kernels/bench.py's conventions):
  call ms    the whole call, triton.testing.do_bench
  kernel ms  the GPU kernels alone, from torch.profiler
Without a GPU nothing is timed, and the report says so.

Accounting. FLOP as FlashAttention counts a causal forward (mlacourse.prefill.fa_flops, from
hopper/benchmark_attn.py): 2 * b * h * s_q * avg * (192 + 128), avg = (max(0, s_k - s_q) + s_k) / 2
-- for a fresh prompt N^2/2 pairs where N(N+1)/2 are visible. The prefix path adds its expansion,
2 * 512 * h * (128 + 128) per cached token. Sparse: FlashMLA's count, 2 * h_q * s_q * top-k *
(576 + 512), every index counted. TFLOPS = FLOP / time.

Target (a target, not a result): on one H200, version 2 (prefill_causal) at b = 1, 8K tokens, causal,
h = 128 reaches at least 0.7 x FlashAttention 3's TFLOPS (kernel times) for the same shape in the same
run. Writes --out (default: bench-prefill-<UTC time>.md here; never kernels/BENCHMARKS.md unless
--update-benchmarks-md)."""
from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys

if __package__ in (None, ""):  # run as a script: make the repository root importable first
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mlacourse.config import DEEPSEEK_V3  # noqa: E402
from mlacourse.prefill import fa_flops, prefill_attention_bytes  # noqa: E402

H = DEEPSEEK_V3.n_heads  # 128
D_QK, D_V, D_LAT = DEEPSEEK_V3.d_qk, DEEPSEEK_V3.d_v, DEEPSEEK_V3.d_latent  # 192, 128, 512
SCALE = D_QK ** -0.5
PAGE = 64
CHUNK_TOKENS = 4096
TARGET = dict(kind="expand", b=1, s_q=8192, s_k=8192, h=H)  # the target's shape
TARGET_RATIO = 0.7  # of FlashAttention 3's TFLOPS, same shape, same run
HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS_MD = os.path.join(HERE, "BENCHMARKS.md")
OTHERS = {"expand": ("sdpa", "fa2", "fa3", "flashinfer"), "prefix": (), "sparse": ("flashmla",)}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Benchmark MLA prefill (a CUDA GPU; --smoke: the correctness gate on a "
                                            "CPU, nothing timed).")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="the target case, one extend, one prefix, one sparse")
    size.add_argument("--smoke", action="store_true",
                      help="tiny shapes on a CPU in Triton's interpreter: the correctness gate, no times")
    p.add_argument("--rep-ms", type=int, default=100, help="do_bench repetition time per measurement")
    p.add_argument("--out", default=None, help="the report (default: bench-prefill-<UTC time>.md here); never "
                                               "kernels/BENCHMARKS.md unless --update-benchmarks-md")
    p.add_argument("--update-benchmarks-md", action="store_true", help="allow --out to be kernels/BENCHMARKS.md")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.out is None:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
        args.out = f"bench-prefill-{stamp}.md"
    if os.path.realpath(args.out) == os.path.realpath(BENCHMARKS_MD) and not args.update_benchmarks_md:
        p.error("--out is kernels/BENCHMARKS.md, which holds the recorded results: write the run elsewhere and "
                "copy what it measured, or pass --update-benchmarks-md")
    return args


def bench_cases(quick: bool = False, smoke: bool = False) -> list:
    """The cases in the order they run: dicts with kind, b, s_q (new tokens per sequence), s_k (keys per
    sequence: prefix + new; sparse: rows), h, topk (sparse)."""
    if smoke:  # the interpreter: tens of tokens, two heads, tiles of 32
        return [dict(kind="expand", b=2, s_q=40, s_k=40, h=2), dict(kind="expand", b=1, s_q=9, s_k=70, h=2),
                dict(kind="prefix", b=2, s_q=12, s_k=90, h=2), dict(kind="sparse", b=1, s_q=6, s_k=80, h=16, topk=40)]
    target = dict(TARGET)
    extend = dict(kind="expand", b=1, s_q=2048, s_k=32768, h=H)
    prefix = dict(kind="prefix", b=1, s_q=2048, s_k=32768, h=H)
    sparse = dict(kind="sparse", b=1, s_q=4096, s_k=32768, h=H, topk=2048)
    if quick:
        return [target, extend, prefix, sparse]
    fresh = [dict(kind="expand", b=b, s_q=s, s_k=s, h=H) for b, s in ((8, 2048), (4, 4096), (2, 8192), (1, 16384))]
    return ([target] + fresh + [extend, prefix, dict(kind="prefix", b=4, s_q=1024, s_k=9216, h=H)]
            + [dict(kind="sparse", b=1, s_q=4096, s_k=s_kv, h=h, topk=2048) for s_kv in (8192, 32768) for h in (H, 64)])


def case_flop(c: dict) -> float:
    """FLOP of one call (module docstring's accounting)."""
    if c["kind"] == "sparse":
        return 2 * c["h"] * c["s_q"] * c["topk"] * (576 + 512)
    attention = fa_flops(c["b"], c["h"], c["s_q"], c["s_k"], D_QK, D_V, causal=True)
    if c["kind"] == "prefix":
        attention += c["b"] * c["s_k"] * 2 * D_LAT * c["h"] * (DEEPSEEK_V3.d_nope + D_V)
    return attention


def floors(gpu_name: str = "H200") -> list:
    """The target shape's compute and memory floors from the GPU's datasheet peaks (mlacourse.hardware):
    FLOP / bf16 peak and the bytes each tensor moves once / bandwidth. A prediction, not a measurement."""
    from mlacourse.hardware import get
    g = get(gpu_name)
    rows = []
    for c in (TARGET, dict(kind="expand", b=1, s_q=2048, s_k=32768, h=H)):
        flop = case_flop(c)
        nbytes = c["b"] * prefill_attention_bytes(c["s_q"], c["s_k"], c["h"], D_QK, D_V)
        compute, memory = flop / (g.bf16_tflops * 1e12) * 1e3, nbytes / (g.hbm_gbps * 1e9) * 1e3
        rows.append(dict(case=c, flop=flop, bytes=nbytes, compute_ms=compute, memory_ms=memory,
                         floor_ms=max(compute, memory), bound="compute" if compute >= memory else "memory"))
    return rows


def floors_md(gpu_name: str = "H200") -> str:
    from mlacourse.hardware import get
    g = get(gpu_name)
    lines = [f"Floors on an {gpu_name} ({g.bf16_tflops:g} dense bf16 TFLOPS, {g.hbm_gbps / 1000:g} TB/s datasheet "
             f"peaks; predictions, not measurements). FLOP as FlashAttention counts them; bytes: q, k, v and out "
             f"once.", "",
             "| case | GFLOP | GB moved | compute ms | memory ms | floor ms | bound |", "|---|---|---|---|---|---|---|"]
    for r in floors(gpu_name):
        c = r["case"]
        lines.append(f"| b={c['b']}, {c['s_q']} queries over {c['s_k']} keys, h={c['h']} | {r['flop'] / 1e9:.1f} "
                     f"| {r['bytes'] / 1e9:.3f} | {r['compute_ms']:.3f} | {r['memory_ms']:.3f} | {r['floor_ms']:.3f} "
                     f"| {r['bound']} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# The cases' data and references
# ---------------------------------------------------------------------------------------

def build_expand(torch, gen, c, device, tail: int = 16):
    """q [b*s_q, h, 192], k [b*s_k + tail, h, 192], v [..., 128] (the tail rows NaN: read by no one),
    cu_seqlens_q, cu_seqlens_k (every sequence the same length, so that SDPA runs it batched)."""
    b, s_q, s_k, h = c["b"], c["s_q"], c["s_k"], c["h"]
    q = torch.randn(b * s_q, h, D_QK, generator=gen, device=device).to(torch.bfloat16)
    k = torch.randn(b * s_k + tail, h, D_QK, generator=gen, device=device).to(torch.bfloat16)
    v = torch.randn(b * s_k + tail, h, D_V, generator=gen, device=device).to(torch.bfloat16)
    k[b * s_k:], v[b * s_k:] = float("nan"), float("nan")
    cu_q = torch.arange(b + 1, dtype=torch.int32, device=device) * s_q
    cu_k = torch.arange(b + 1, dtype=torch.int32, device=device) * s_k
    return q, k, v, cu_q, cu_k


def build_prefix(torch, gen, c, device):
    """q [b*s_q, h, 192]; a paged bf16 latent cache of b sequences of s_k tokens (the last s_q of each
    new) on shuffled pages, the tail of each last page NaN, unused table entries 2**31 - 1;
    w_uk, w_uv [h, 512, 128] scaled so K and V have rms about 1."""
    b, s_q, s_k, h = c["b"], c["s_q"], c["s_k"], c["h"]
    need = -(-s_k // PAGE)
    perm = torch.randperm(b * need, generator=gen, device="cpu").to(device=device, dtype=torch.int32)
    table = perm.reshape(b, need)
    kv = torch.randn(b * need, PAGE, 1, D_LAT + DEEPSEEK_V3.d_rope, generator=gen, device=device).to(torch.bfloat16)
    if s_k % PAGE:
        kv[table[:, -1].long(), s_k % PAGE:] = float("nan")
    table = torch.cat([table, torch.full((b, 1), 2**31 - 1, dtype=torch.int32, device=device)], dim=1)
    sl = torch.full((b,), s_k, dtype=torch.int32, device=device)
    cu = torch.arange(b + 1, dtype=torch.int32, device=device) * s_q
    q = torch.randn(b * s_q, h, D_QK, generator=gen, device=device).to(torch.bfloat16)
    w_uk = (torch.randn(h, D_LAT, DEEPSEEK_V3.d_nope, generator=gen, device=device) / math.sqrt(D_LAT)).to(torch.bfloat16)
    w_uv = (torch.randn(h, D_LAT, D_V, generator=gen, device=device) / math.sqrt(D_LAT)).to(torch.bfloat16)
    return q, kv, table, sl, cu, w_uk, w_uv


def build_sparse(torch, gen, c, device):
    """q [s_q, h, 576] bf16, kv [s_kv, 1, 576] bf16, indices [s_q, 1, topk]: distinct random rows."""
    s_q, s_kv, h, topk = c["s_q"], c["s_k"], c["h"], c["topk"]
    q = torch.randn(s_q, h, 576, generator=gen, device=device).to(torch.bfloat16)
    kv = torch.randn(s_kv, 1, 576, generator=gen, device=device).to(torch.bfloat16)
    idx = torch.rand(s_q, s_kv, generator=gen, device=device).topk(min(topk, s_kv), dim=-1).indices
    if topk > s_kv:
        idx = torch.cat([idx, torch.full((s_q, topk - s_kv), -1, device=device, dtype=idx.dtype)], dim=-1)
    return q, kv, idx.to(torch.int32)[:, None]


def references(kind: str, data, on_gpu: bool):
    """(float64, GPU-like) on the device for one case; kind as in bench_cases. The prefix path's
    references follow its workspace (kernels.prefill_context.workspace_dtype): the bf16 K/V a GPU
    stores, the float32 the interpreter does."""
    import torch

    from kernels import reference as R
    if kind == "expand":
        q, k, v, cu_q, cu_k = data
        return (R.reference_prefill_batched(q, k, v, cu_q, cu_k, SCALE),
                R.reference_prefill_batched(q, k, v, cu_q, cu_k, SCALE, mode="gpu"))
    if kind == "prefix":
        ws = torch.bfloat16 if on_gpu else None
        ops = None if on_gpu else torch.float32
        return (R.reference_prefix_prefill_batched(*data, SCALE, workspace_dtype=ws),
                R.reference_prefix_prefill_batched(*data, SCALE, mode="gpu", operands=ops, workspace_dtype=ws))
    q, kv, idx = data
    return (R.reference_sparse_prefill_batched(q, kv, idx, SCALE),
            R.reference_sparse_prefill_batched(q, kv, idx, SCALE, mode="gpu"))


def v_rms(kind: str, data) -> float:
    """The rms of the case's V values (kernels.reference.value_rms): the out tolerance's atol is in
    their units. The prefix path's V = c W_UV, taken over the first 1,024 cached rows of head 0."""
    import torch

    from kernels.reference import value_rms
    if kind == "expand":
        q, k, v, cu_q, cu_k = data
        return value_rms(v[:int(cu_k[-1])])
    if kind == "sparse":
        return value_rms(data[1][:, 0, :D_LAT])
    q, kv, bt, sl, cu, w_uk, w_uv = data
    n = min(1024, int(sl[0]))
    rows = kv[bt[0, :-(-n // kv.shape[1])].long(), :, 0].reshape(-1, kv.shape[-1])[:n, :D_LAT]  # its used pages only
    return value_rms(rows.double() @ w_uv[0].double()) if rows.numel() else 1.0


# ---------------------------------------------------------------------------------------
# The implementations: ours and the libraries', each a call giving (out, lse) in our layouts
# ---------------------------------------------------------------------------------------

def ours_expand(version):
    def make(data, c):
        from kernels.mla_prefill import mla_prefill
        q, k, v, cu_q, cu_k = data
        return lambda: mla_prefill(q, k, v, cu_q, cu_k, c["s_q"], SCALE, True, version=version)
    return make


def sdpa_fn(data, c):
    """torch's scaled_dot_product_attention over the batch [b, h, s, d] (bottom-right causal mask
    for an extend): out only (it returns no lse)."""
    import torch
    import torch.nn.functional as F
    q, k, v, cu_q, cu_k = data
    b, s_q, s_k, h = c["b"], c["s_q"], c["s_k"], c["h"]
    qb = q.reshape(b, s_q, h, D_QK).transpose(1, 2)
    kb = k[:b * s_k].reshape(b, s_k, h, D_QK).transpose(1, 2)
    vb = v[:b * s_k].reshape(b, s_k, h, D_V).transpose(1, 2)
    mask = None
    if s_q != s_k:
        from torch.nn.attention.bias import causal_lower_right
        mask = causal_lower_right(s_q, s_k)

    def fn():
        out = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=mask, is_causal=mask is None, scale=SCALE)
        return out.transpose(1, 2).reshape(b * s_q, h, D_V), None
    return fn


def fa2_fn(data, c):
    from flash_attn import flash_attn_varlen_func  # FlashAttention 2
    q, k, v, cu_q, cu_k = data

    def fn():
        res = flash_attn_varlen_func(q, k, v, cu_q, cu_k, c["s_q"], c["s_k"], softmax_scale=SCALE, causal=True,
                                     return_attn_probs=True)
        return res[0], _lse_layout(res[1], q)
    return fn


def fa3_fn(data, c):
    try:
        from flash_attn_interface import flash_attn_varlen_func  # FlashAttention 3 (hopper/)
    except ImportError:
        from flash_attn_3.flash_attn_interface import flash_attn_varlen_func
    q, k, v, cu_q, cu_k = data

    def fn():
        res = flash_attn_varlen_func(q, k, v, cu_q, cu_k, c["s_q"], c["s_k"], softmax_scale=SCALE, causal=True,
                                     return_attn_probs=True)
        return (res[0], _lse_layout(res[1], q)) if isinstance(res, tuple) else (res, None)
    return fn


def flashinfer_fn(data, c):
    """FlashInfer's ragged prefill with head_dim_qk 192 and head_dim_vo 128 (vLLM's MLA prefill
    path). Its lse is in base 2: times ln 2."""
    import flashinfer
    import torch
    q, k, v, cu_q, cu_k = data
    ws = torch.empty(256 << 20, dtype=torch.uint8, device=q.device)
    w = flashinfer.prefill.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD")
    w.plan(cu_q.cpu(), cu_k.cpu(), c["h"], c["h"], D_QK, head_dim_vo=D_V, causal=True, sm_scale=SCALE,
           q_data_type=q.dtype)

    def fn():
        out, lse = w.run(q, k, v, return_lse=True)
        return out, (lse * math.log(2)).transpose(0, 1)
    return fn


def _lse_layout(lse, q):
    """[h, total_q] when a library returns the varlen layout, else None (not compared)."""
    return lse if lse is not None and tuple(lse.shape) == (q.shape[1], q.shape[0]) else None


def ours_prefix(data, c):
    from kernels.prefill_context import PrefixWorkspace, mla_prefill_with_prefix, workspace_dtype
    from kernels.launch import interpreting
    q, kv, bt, sl, cu, w_uk, w_uv = data
    chunk = CHUNK_TOKENS if not interpreting() else PAGE * c["b"]  # the interpreter: a page a sequence per chunk
    ws = PrefixWorkspace.allocate(chunk, q.shape[0], q.shape[1], workspace_dtype(q, not interpreting()), q.device)
    return lambda: mla_prefill_with_prefix(q, kv, bt, sl, cu, c["s_q"], w_uk, w_uv, SCALE, chunk,
                                           max_prefix=c["s_k"] - c["s_q"], workspace=ws)


def ours_sparse(data, c):
    from kernels.sparse_prefill import sparse_mla_prefill
    q, kv, idx = data
    return lambda: sparse_mla_prefill(q, kv, idx, SCALE)


def flashmla_sparse_fn(data, c):
    """FlashMLA's flash_mla_sparse_fwd: (out, max_logits, lse); lse +inf (no valid index) read as -inf."""
    import flash_mla
    import torch
    q, kv, idx = data

    def fn():
        out, _, lse = flash_mla.flash_mla_sparse_fwd(q, kv, idx, SCALE)[:3]
        return out, torch.where(lse == float("inf"), torch.full_like(lse, float("-inf")), lse)
    return fn


def implementations(kind: str) -> dict:
    """name -> maker(data, case) -> call giving (out, lse), for one kind of case."""
    from kernels.mla_prefill import PREFILL_TABLE
    if kind == "expand":
        ours = {n: ours_expand(n) for n, v in PREFILL_TABLE.items() if v.call == "expand"}
        return dict(ours, sdpa=sdpa_fn, fa2=fa2_fn, fa3=fa3_fn, flashinfer=flashinfer_fn)
    if kind == "prefix":
        return {"prefix_chunks": ours_prefix}
    return {"prefill_sparse": ours_sparse, "flashmla": flashmla_sparse_fn}


def gate(name, kind, out, lse, ref64, ref_gpu, interpreter: bool, rms: float):
    """The correctness gate of one implementation on one case: (ok, text). Without an lse the out
    checks only (the GPU-like reference's own two still run)."""
    from kernels.reference import check_against_references
    tol_kind = "sparse_prefill" if kind == "sparse" else "prefill"
    checks = check_against_references(name, out, lse if lse is not None else ref64[1], ref64, ref_gpu,
                                      not interpreter, rms, kind=tol_kind)
    if lse is None:  # the implementation's own lse checks: it returned none
        checks = [c for c in checks if not c.name.startswith("lse (")]
    bad = [c for c in checks if not c.ok]
    if not bad:
        c = next(c for c in checks if c.name.startswith("out ("))
        return True, f"ok: max abs {c.max_abs:.1e}, cos {c.cos_diff:.1e}" + ("" if lse is not None else "; no lse")
    return False, "FAILED " + bad[0].message


# ---------------------------------------------------------------------------------------
# The run and its report
# ---------------------------------------------------------------------------------------

def shape_text(c: dict) -> str:
    if c["kind"] == "sparse":
        return f"s_q={c['s_q']}, s_kv={c['s_k']}, top-k {c['topk']}, h_q={c['h']}"
    new = f"{c['s_q']} new after {c['s_k'] - c['s_q']}" if c["s_k"] != c["s_q"] else f"{c['s_q']} tokens"
    return f"b={c['b']} x {new}, h={c['h']}"


def target_line(rows: list) -> str:
    """Whether this run met the target, from its own rows (kernel times)."""
    def row(name):
        return next((r for r in rows if r["impl"] == name and all(r["case"].get(k) == v for k, v in TARGET.items())),
                    None)
    ours, fa3 = row("prefill_causal"), row("fa3")
    head = (f"Target (not a result until a GPU run meets it): prefill_causal >= {TARGET_RATIO} x FlashAttention 3's "
            f"TFLOPS at {shape_text(TARGET)}, causal, same run (kernel times). This run: ")
    if not ours or ours.get("tflops") is None:
        return head + "prefill_causal was not timed."
    if not fa3 or fa3.get("tflops") is None:
        return head + f"prefill_causal {ours['tflops']:.1f} TFLOPS; FlashAttention 3 was not timed ({(fa3 or {}).get('note', 'no row')})."
    ratio = ours["tflops"] / fa3["tflops"]
    return head + (f"{ours['tflops']:.1f} vs {fa3['tflops']:.1f} TFLOPS = {ratio:.2f}x: "
                   + ("met." if ratio >= TARGET_RATIO else "NOT met."))


def render_markdown(meta: dict, rows: list) -> str:
    failed = [r for r in rows if r.get("failed")]
    gpu = meta.get("on_gpu", False)
    lines = ["# MLA prefill benchmark", "",
             f"- date (UTC): {meta['date']}", f"- GPU: {meta['gpu']}", f"- driver: {meta['driver']}",
             f"- torch {meta['torch']}, triton {meta['triton']}, python {meta['python']}; "
             + ", ".join(f"{k} {v}" for k, v in meta.get("libraries", {}).items()),
             f"- command: `{meta['command']}`",
             "- correctness gate: " + (f"**{len(failed)} row(s) FAILED and were not timed**" if failed
                                       else "every checked row passed"),
             "- times: " + ("medians on the GPU above" if gpu else
                            "**none: no GPU in this run (Triton's interpreter checks correctness only)**"),
             "", target_line(rows), "",
             "Every row is checked before it is timed (out and lse of every query row against float64 and a GPU-like "
             "reference, FlashMLA's prefill tolerances; the module docstring). TFLOPS = FLOP / time, FLOP as "
             "FlashAttention counts a causal forward (+ the expansion for the prefix path; FlashMLA's count for the "
             "sparse prefill).", "",
             "| kind | shape | implementation | GFLOP | call ms | kernel ms | TFLOPS (call) | TFLOPS (kernels) | check |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        head = f"| {r['case']['kind']} | {shape_text(r['case'])} | {r['impl']} | {r['flop'] / 1e9:.1f} "
        if r.get("ms") is None:
            lines.append(head + f"| not timed | | | | {r.get('note', '')} |")
        else:
            kms = f"{r['kernel_ms']:.3f}" if r.get("kernel_ms") else "-"
            tk = f"{r['tflops']:.1f}" if r.get("tflops") else "-"
            lines.append(head + f"| {r['ms']:.3f} | {kms} | {r['tflops_call']:.1f} | {tk} | {r.get('check', '')} |")
    if failed:
        lines += ["", "## Failed the correctness gate (not timed)", ""]
        lines += [f"- {r['case']['kind']} {shape_text(r['case'])} {r['impl']}: {r.get('note', '')}" for r in failed]
    return "\n".join(lines) + "\n"


def run(args, device=None, timer=None, kernel_timer=None, cases=None):
    """Check, then (on a GPU) time, every case; write the report. Returns the rows; a row with "failed"
    set did not pass the gate. device/timer/kernel_timer/cases are for tests."""
    import torch
    import triton

    from kernels.bench import _driver, kernel_time_ms
    from kernels.launch import interpreting

    smoke = getattr(args, "smoke", False)
    if device is None:
        if smoke:
            device = "cpu"
        elif not torch.cuda.is_available():
            sys.exit("bench_prefill.py needs a CUDA GPU (torch.cuda.is_available() is False); nothing was written. "
                     "`--smoke` runs the correctness gate on a CPU.")
        else:
            device = "cuda"
    dev = torch.device(device)
    on_gpu = dev.type == "cuda"
    if not on_gpu and not interpreting():
        sys.exit("on a CPU the kernels need Triton's interpreter: run with TRITON_INTERPRET=1 set")
    if on_gpu and timer is None:
        from triton.testing import do_bench

        def timer(fn):
            return do_bench(fn, warmup=25, rep=args.rep_ms, return_mode="median")
    if on_gpu and kernel_timer is None:
        def kernel_timer(fn):
            return kernel_time_ms(fn, reps=10, device="cuda")
    gen = torch.Generator(device=dev).manual_seed(args.seed)
    builders = {"expand": build_expand, "prefix": build_prefix, "sparse": build_sparse}
    rows, libraries = [], {}  # rows of the report; library -> version
    for c in (cases or bench_cases(getattr(args, "quick", False), smoke)):
        if on_gpu:
            torch.cuda.empty_cache()
        data = builders[c["kind"]](torch, gen, c, dev)
        ref64, ref_gpu = references(c["kind"], data, on_gpu)
        rms = v_rms(c["kind"], data)
        flop = case_flop(c)
        for name, make in implementations(c["kind"]).items():
            row = dict(case=c, impl=name, flop=flop)
            try:
                fn = make(data, c)
            except ImportError as e:
                rows.append(dict(row, ms=None, note=f"does not import ({e.name or e})"))
                continue
            try:
                out, lse = fn()
                if on_gpu:
                    torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 -- reported, not a dead run
                why = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
                if name in OTHERS[c["kind"]]:  # a library that does not take this shape (FlashAttention 2 and
                    rows.append(dict(row, ms=None, note=f"did not run: {why}"))  # d_v != d_qk, ...): not ours
                    print(f"{c['kind']:6s} {shape_text(c):40s} {name:15s} did not run: {why}", flush=True)
                    continue
                ok, check = False, f"FAILED with {why}"
            else:
                ok, check = gate(name, c["kind"], out, lse, ref64, ref_gpu, not on_gpu, rms)
            if not ok:
                rows.append(dict(row, ms=None, failed=True, note=check))
                print(f"{c['kind']:6s} {shape_text(c):40s} {name:15s} NOT TIMED: {check}", flush=True)
                continue
            if not on_gpu:
                rows.append(dict(row, ms=None, check=check, note=f"{check}; not timed: no GPU"))
                print(f"{c['kind']:6s} {shape_text(c):40s} {name:15s} {check} (no GPU: not timed)", flush=True)
                continue
            ms, kms = timer(fn), kernel_timer(fn)
            row.update(ms=ms, kernel_ms=kms, tflops_call=flop / ms / 1e9, tflops=flop / kms / 1e9 if kms else None,
                       check=check)
            rows.append(row)
            print(f"{c['kind']:6s} {shape_text(c):40s} {name:15s} call {ms:8.3f} ms ({row['tflops_call']:6.1f} TFLOPS), "
                  f"kernels {kms:8.3f} ms  {check}", flush=True)
        del data, ref64, ref_gpu
    command = "python kernels/bench_prefill.py" + (" --quick" if getattr(args, "quick", False) else "") + \
        (" --smoke" if smoke else "") + f" --out {args.out}"
    for mod in ("flash_attn", "flash_attn_interface", "flashinfer", "flash_mla"):
        try:
            m = __import__(mod)
            libraries[mod] = getattr(m, "__version__", "installed")
        except ImportError:
            libraries[mod] = "not installed"
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
                gpu=torch.cuda.get_device_name(dev) if on_gpu else "none (CPU, Triton's interpreter)",
                driver=_driver() if on_gpu else "-", torch=torch.__version__, triton=triton.__version__,
                python=platform.python_version(), command=command, on_gpu=on_gpu,
                libraries=libraries)
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
    rows = run(args)
    failed = [r for r in rows if r.get("failed")]
    if failed:
        print(f"{len(failed)} row(s) failed the correctness gate and were not timed; see {args.out}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
