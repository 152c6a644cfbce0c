"""Torch references for paged MLA decode, in the kernels' calling conventions.

`reference_decode` (dense) and `reference_sparse_decode` (top-k indices) are the exact ones
the tests use. Two modes:

  mode="float64"  the mathematical answer: per sequence the rows it needs (mlacourse.paged's
                  rule; for sparse decode, mlacourse.sparse), FP8 rows dequantized with the
                  numpy mlacourse.fp8 (an implementation independent of kernels.fp8), every
                  operation in float64. out and lse float64.
  mode="gpu"      what a GPU kernel computes, rounded where it rounds (the GPU-like
                  reference). `operands` is the type of the kernels' dot operands on a GPU:
                  q's dtype for versions 2-7 (tl.dot / wgmma on bf16 or fp16), float32 for
                  version 1 (vector FMAs); the rows of VERSION_TABLE say which (`dot_operands`).
                  The rounding points, in kernel order:
                    q                  its own dtype, then `operands` (exact)
                    K = V rows         FP8: code * scale in float32 (one fp32 multiply), then
                                       rounded to `operands` (tiles._load_kv_tile's .to(DTYPE));
                                       rope: bf16, rounded to `operands`; bf16/fp16 rows: as stored
                    S = Q K^T          the exact dot of the rounded operands, rounded once to
                                       float32 (the MMA accumulates in fp32; the order of its
                                       additions, ~2^-24 relative each, is not modelled)
                    P = exp(S - max)   rounded to `operands` before P V (p.to(DTYPE)); the row
                                       sum l adds the unrounded P, as the kernels do
                    out = P V / l      rounded to q's dtype (the store); lse to float32
                  The kernel's P is taken against its running max, the emulation's against the
                  final one: the roundings are of the same size, not the same bits. On a GPU
                  with power-of-two FP8 scales (mlacourse.fp8's default) the K rounding is
                  exact; with max|x|/448 scales it is not, and FP8 results move by it.
                  out in q's dtype, lse float32: what a GPU run returns.

Triton's interpreter (TRITON_INTERPRET=1) runs the kernels' bf16 dots in fp32, so a kernel
in the interpreter sits near the float64 reference, while a GPU sits near the "gpu" one; the
tests check the kernel against both and the "gpu" reference against float64 at the
tolerances a GPU run is held to, so that what passes here is what a GPU will pass.

Rows that see no key: out 0 and lse -inf in both modes (log of an empty sum; FlashMLA
returns +inf, see kernels/sparse_decode.py).
`reference_decode_padded` and `reference_sparse_decode_batched` are batched versions on the
device (the benchmarks' gates; reference_decode_padded also times a float32 torch decode)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from mlacourse import fp8 as np_fp8

from .dims import D_K, D_LATENT

REFERENCE_MODES = ("float64", "gpu")


def round_to(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """float64 x rounded to `dtype` (nearest even) and back to float64. A value computed in
    float32 on the GPU is rounded to float32 first (float64 -> float32 -> bf16, as a kernel's
    fp32 value is rounded once more when stored as bf16)."""
    x32 = x.to(torch.float32)
    return (x32 if dtype == torch.float32 else x32.to(dtype)).to(torch.float64)


def _check_mode(mode, operands):
    if mode not in REFERENCE_MODES:
        raise ValueError(f"mode must be one of {REFERENCE_MODES}, got {mode!r}")
    if operands not in (None, torch.bfloat16, torch.float16, torch.float32):
        raise ValueError(f"operands must be torch.bfloat16, torch.float16 or torch.float32 (None: q's dtype), "
                         f"got {operands!r}")
    if mode == "float64" and operands is not None:
        raise ValueError("operands= applies to mode='gpu' only (float64 rounds nowhere)")


def gpu_rows(rows64: torch.Tensor, operands: torch.dtype, is_fp8: bool) -> torch.Tensor:
    """Cache rows as a kernel's dots see them: float64 [n, 576] exact values (FP8: code * scale
    computed exactly, rope bf16) -> rounded to float32 (the dequantizing multiply), then to
    `operands`. A bf16/fp16 cache row is already in q's dtype: rounding it changes nothing."""
    return round_to(round_to(rows64, torch.float32), operands) if is_fp8 else round_to(rows64, operands)


def gpu_attention(q64: torch.Tensor, kv: torch.Tensor, scale: float, operands: torch.dtype, d_v: int,
                  visible: torch.Tensor | None = None):
    """The GPU-like softmax attention of one sequence. q64 [h, s, 576] (q's values), kv [n, 576]
    (already gpu_rows), visible [s, n] bool or None (all). Returns out [s, h, d_v] float64 (not
    yet rounded to q's dtype) and lse [h, s] float64; rows that see nothing: 0 and -inf."""
    q_op = round_to(q64, operands)
    scores = round_to(torch.einsum("hsd,nd->hsn", q_op, kv), torch.float32) * scale  # [h, s, n]
    if visible is not None:
        scores = scores.masked_fill(~visible[None], -math.inf)
    m = scores.amax(dim=-1, keepdim=True) if scores.shape[-1] else torch.full(scores.shape[:-1] + (1,), -math.inf,
                                                                               dtype=torch.float64)
    seen = torch.isfinite(m)  # [h, s, 1]
    p = torch.where(seen, torch.exp(scores - torch.where(seen, m, 0.0)), 0.0)  # [h, s, n]
    l_sum = p.sum(dim=-1, keepdim=True)  # the unrounded P, as the kernels sum it
    p_op = round_to(p, operands)  # P rounded before P V
    out = torch.einsum("hsn,nd->shd", p_op, kv[:, :d_v]) / torch.where(seen, l_sum, 1.0).transpose(0, 1)
    lse = torch.where(seen, m + torch.log(torch.where(seen, l_sum, 1.0)), -math.inf)[..., 0]
    return out, lse


def gather_sequence(kv_cache, block_table, cache_seqlens, i: int, is_fp8_kvcache: bool = False):
    """Rows of sequence i as float64 [n, 576]; reads only table entries 0..ceil(n/P)-1."""
    n = int(cache_seqlens[i])
    page = kv_cache.shape[1]
    ids = [int(block_table[i, j]) for j in range(-(-n // page))]
    if not ids:
        return torch.zeros(0, D_K, dtype=torch.float64)
    rows = torch.cat([kv_cache[j, :, 0] for j in ids], dim=0)[:n]  # [n, 576] or [n, 656] uint8
    if is_fp8_kvcache:
        return torch.from_numpy(np_fp8.unpack_fp8_row(rows.cpu().numpy()))
    return rows.to(torch.float64).cpu()


def reference_decode(q, kv_cache, block_table, cache_seqlens, head_dim_v=D_LATENT, softmax_scale=None,
                     causal=False, is_fp8_kvcache=False, mode="float64", operands=None):
    """q [b, s_q, h_q, 576] -> out [b, s_q, h_q, 512], lse [b, h_q, s_q] (CPU).
    mode "float64": both float64. mode "gpu": the GPU-like reference (module docstring; operands
    default to q's dtype), out in q's dtype, lse float32. Rows that see no key: out 0, lse -inf."""
    _check_mode(mode, operands)
    b, s_q, h_q, d_k = q.shape
    scale = softmax_scale if softmax_scale is not None else d_k ** -0.5
    out = torch.zeros(b, s_q, h_q, head_dim_v, dtype=torch.float64)
    lse = torch.full((b, h_q, s_q), -math.inf, dtype=torch.float64)
    for i in range(b):
        kv = gather_sequence(kv_cache, block_table, cache_seqlens, i, is_fp8_kvcache)  # [n, 576]
        n = kv.shape[0]
        qi = q[i].to(torch.float64).cpu().transpose(0, 1)  # [h_q, s_q, 576]
        visible = None
        if causal:
            rows = torch.arange(s_q)[:, None]
            visible = torch.arange(n)[None, :] <= rows + (n - s_q)  # [s_q, n], bottom-right aligned
        if mode == "gpu":
            out[i], lse[i] = gpu_attention(qi, gpu_rows(kv, operands or q.dtype, is_fp8_kvcache), scale,
                                           operands or q.dtype, head_dim_v, visible)
            continue
        scores = torch.einsum("hsd,nd->hsn", qi, kv) * scale  # [h_q, s_q, n]
        if visible is not None:
            scores = scores.masked_fill(~visible[None], -math.inf)
        row_lse = torch.logsumexp(scores, dim=-1)  # [h_q, s_q]; -inf where nothing is visible
        seen = torch.isfinite(row_lse)
        p = torch.where(seen[..., None], torch.exp(scores - row_lse[..., None]), torch.zeros_like(scores))
        out[i] = torch.einsum("hsn,nd->shd", p, kv[:, :head_dim_v])
        lse[i] = torch.where(seen, row_lse, torch.full_like(row_lse, -math.inf))
    if mode == "gpu":
        return out.to(q.dtype), lse.to(torch.float32)
    return out, lse


def reference_sparse_decode(q, kv_cache, indices, softmax_scale=None, mode="float64", operands=None):
    """Sparse decode (FlashMLA's `indices` call) on the CPU: q [b, s_q, h_q, 576], kv_cache uint8
    [num_blocks, P, 1, 656], indices [b, s_q, topk] (physical rows, -1 = none) -> out [b, s_q,
    h_q, 512], lse [b, h_q, s_q]. mode "float64": mlacourse.sparse.sparse_decode (numpy), both
    float64; mode "gpu": the GPU-like reference, out in q's dtype, lse float32. A query token
    whose indices are all -1: out 0, lse -inf. Indices are checked (a bad one is a ValueError)."""
    from mlacourse import sparse as np_sparse
    _check_mode(mode, operands)
    q_np = q.detach().to(torch.float64).cpu().numpy()
    cache = kv_cache.detach().cpu().numpy()
    idx = indices.detach().cpu().numpy() if isinstance(indices, torch.Tensor) else np.asarray(indices)
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    out64, lse64 = np_sparse.sparse_decode(q_np, cache, idx, scale)  # checks every argument and index
    if mode == "float64":
        return torch.from_numpy(out64), torch.from_numpy(lse64)
    b, s_q, h_q, _ = q.shape
    flat = cache.reshape(-1, cache.shape[-1])
    ops = operands or q.dtype
    out = torch.zeros(b, s_q, h_q, D_LATENT, dtype=torch.float64)
    lse = torch.full((b, h_q, s_q), -math.inf, dtype=torch.float64)
    for i in range(b):
        for j in range(s_q):
            keys = idx[i, j][idx[i, j] >= 0]  # the valid entries in order, duplicates kept
            if keys.size == 0:
                continue
            kv = gpu_rows(torch.from_numpy(np_fp8.unpack_fp8_row(flat[keys])), ops, True)  # [n, 576]
            o, l_ = gpu_attention(torch.from_numpy(q_np[i, j])[:, None], kv, scale, ops, D_LATENT)
            out[i, j], lse[i, :, j] = o[0], l_[:, 0]
    return out.to(q.dtype), lse.to(torch.float32)


def reference_decode_padded(q, kv_cache, block_table, cache_seqlens, head_dim_v=D_LATENT, softmax_scale=None,
                            causal=False, is_fp8_kvcache=False, dtype=torch.float32, exact=False, mode="float64",
                            operands=None):
    """Batched reference on q's device: gathers every sequence's pages into [b, max_blocks*P,
    576] and masks the padding. Table entries past a sequence's need are replaced by page 0
    before the gather, so they are never dereferenced; rows past a sequence's end are zeroed
    (they may hold NaN poison, and 0 * NaN is NaN). exact=False (timing): out in q's dtype,
    lse float32; exact=True (the benchmark's gate, with dtype=torch.float64): both in `dtype`.
    mode="gpu" (exact=True, dtype=torch.float64): the GPU-like reference of the module
    docstring, batched -- out in q's dtype, lse float32 (the benchmark's second gate)."""
    from . import fp8 as torch_fp8

    _check_mode(mode, operands)
    if mode == "gpu" and not (exact and dtype == torch.float64):
        raise ValueError("mode='gpu' computes in float64 around its roundings: pass exact=True, dtype=torch.float64")
    ops = operands or q.dtype
    b, s_q, h_q, d_k = q.shape
    page = kv_cache.shape[1]
    scale = softmax_scale if softmax_scale is not None else d_k ** -0.5
    max_blocks = block_table.shape[1]
    need = (cache_seqlens.long() + page - 1) // page  # [b]
    used = torch.arange(max_blocks, device=q.device)[None, :] < need[:, None]
    ids = torch.where(used, block_table.long(), torch.zeros_like(block_table.long()))  # [b, max_blocks]
    rows = kv_cache[ids][:, :, :, 0]  # [b, max_blocks, P, 576 or 656]
    kv = torch_fp8.unpack_fp8_rows(rows) if is_fp8_kvcache else rows  # FP8: code * scale in float32, as a GPU
    kv = kv.reshape(b, max_blocks * page, d_k).to(dtype)  # [b, s_k_max, 576]
    if mode == "gpu":
        kv = round_to(kv, ops)
    s_k = kv.shape[1]
    valid = torch.arange(s_k, device=q.device)[None, :] < cache_seqlens.long()[:, None]  # [b, s_k_max]
    kv = torch.where(valid[..., None], kv, torch.zeros((), dtype=dtype, device=q.device))
    q_d = round_to(q.to(dtype), ops) if mode == "gpu" else q.to(dtype)
    scores = torch.einsum("bshd,bnd->bhsn", q_d, kv)  # [b, h_q, s_q, s_k]
    scores = (round_to(scores, torch.float32) if mode == "gpu" else scores) * scale
    pos = torch.arange(s_k, device=q.device)
    limit = cache_seqlens.long()[:, None] - (s_q - 1 - torch.arange(s_q, device=q.device))[None, :] \
        if causal else cache_seqlens.long()[:, None].expand(b, s_q)  # [b, s_q] visible keys per row
    visible = pos[None, None, :] < limit[:, :, None]  # [b, s_q, s_k]
    scores = scores.masked_fill(~visible[:, None], -math.inf)
    if mode == "gpu":  # P against the row max, rounded before P V; l sums the unrounded P
        m = scores.amax(dim=-1, keepdim=True)
        seen = torch.isfinite(m)
        p = torch.where(seen, torch.exp(scores - torch.where(seen, m, 0.0)), 0.0)  # [b, h_q, s_q, s_k]
        l_sum = p.sum(dim=-1, keepdim=True)
        out = torch.einsum("bhsn,bnd->bshd", round_to(p, ops), kv[..., :head_dim_v])
        out = out / torch.where(seen, l_sum, 1.0).permute(0, 2, 1, 3)
        lse = torch.where(seen, m + torch.log(torch.where(seen, l_sum, 1.0)), -math.inf)[..., 0]
        return out.to(q.dtype), lse.to(torch.float32)
    lse = torch.logsumexp(scores, dim=-1)  # [b, h_q, s_q]
    p = torch.exp(scores - lse[..., None]).nan_to_num(0.0)
    out = torch.einsum("bhsn,bnd->bshd", p, kv[..., :head_dim_v])  # [b, s_q, h_q, 512]
    if exact:
        return out, lse
    return out.to(q.dtype), lse.float()


def reference_sparse_decode_batched(q, kv_cache, indices, softmax_scale=None, mode="float64", operands=None,
                                    max_bytes: int = 2**30):
    """reference_sparse_decode on q's device, batched over query tokens (the sparse benchmark's
    gate): rows gathered by index, dequantized exactly in float64 (code * scale; mode "gpu" then
    rounds as the kernels do), -1 entries masked. Indices are not checked (the caller's, as for
    the kernel). Returns out [b, s_q, h_q, 512], lse [b, h_q, s_q]: float64 (mode "float64") or
    q's dtype and float32 (mode "gpu"). Works through the tokens in chunks whose float64 rows
    stay under max_bytes."""
    _check_mode(mode, operands)
    ops = operands or q.dtype
    b, s_q, h_q, d_k = q.shape
    topk = indices.shape[-1]
    scale = softmax_scale if softmax_scale is not None else d_k ** -0.5
    flat = kv_cache.reshape(-1, kv_cache.shape[-1])  # [rows, 656]
    qt = q.reshape(b * s_q, h_q, d_k)
    it = indices.reshape(b * s_q, topk).long()
    out = torch.empty(b * s_q, h_q, D_LATENT, dtype=torch.float64, device=q.device)
    lse = torch.empty(b * s_q, h_q, dtype=torch.float64, device=q.device)
    chunk = max(1, int(max_bytes // (8 * topk * (d_k + 2 * h_q))))
    n_tiles = D_LATENT // np_fp8.TILE
    for t0 in range(0, b * s_q, chunk):
        idx = it[t0:t0 + chunk]  # [T, topk]
        valid = idx >= 0
        rows = flat[torch.where(valid, idx, torch.zeros_like(idx))]  # [T, topk, 656] uint8
        codes = rows[..., :D_LATENT].contiguous().view(torch.float8_e4m3fn).to(torch.float64)
        scales = rows[..., D_LATENT:D_LATENT + 4 * n_tiles].contiguous().view(torch.float32).to(torch.float64)
        rope = rows[..., D_LATENT + 4 * n_tiles:].contiguous().view(torch.bfloat16).to(torch.float64)
        lat = (codes.reshape(*codes.shape[:2], n_tiles, np_fp8.TILE) * scales[..., None]).reshape(codes.shape)
        kv = torch.cat([lat, rope], dim=-1)  # [T, topk, 576] the exact values
        if mode == "gpu":
            kv = gpu_rows(kv, ops, True)
        kv = torch.where(valid[..., None], kv, 0.0)  # -1 entries read page 0 here: their values never count
        qd = qt[t0:t0 + chunk].to(torch.float64)
        qd = round_to(qd, ops) if mode == "gpu" else qd
        scores = torch.einsum("thd,tnd->thn", qd, kv)  # [T, h_q, topk]
        scores = (round_to(scores, torch.float32) if mode == "gpu" else scores) * scale
        scores = scores.masked_fill(~valid[:, None, :], -math.inf)
        m = scores.amax(dim=-1, keepdim=True)
        seen = torch.isfinite(m)
        p = torch.where(seen, torch.exp(scores - torch.where(seen, m, 0.0)), 0.0)
        l_sum = p.sum(dim=-1, keepdim=True)
        pv = round_to(p, ops) if mode == "gpu" else p
        out[t0:t0 + chunk] = torch.einsum("thn,tnd->thd", pv, kv[..., :D_LATENT]) / torch.where(seen, l_sum, 1.0)
        lse[t0:t0 + chunk] = torch.where(seen, m + torch.log(torch.where(seen, l_sum, 1.0)), -math.inf)[..., 0]
    out = out.reshape(b, s_q, h_q, D_LATENT)
    lse = lse.reshape(b, s_q, h_q).permute(0, 2, 1).contiguous()
    if mode == "gpu":
        return out.to(q.dtype), lse.to(torch.float32)
    return out, lse


def value_rms(values) -> float:
    """Root mean square of the finite entries of a tensor (the scale of a case's V values, for
    gpu_tolerances); 0.0 when there is none."""
    v = torch.as_tensor(values).detach().to(torch.float64).flatten()
    v = v[torch.isfinite(v)]
    return float(v.pow(2).mean().sqrt()) if v.numel() else 0.0


@dataclass
class Comparison:
    """The numbers of one FlashMLA-style check (kernels.reference.compare)."""
    name: str
    ok: bool  # every element within atol + rtol*|ref|, infinities matched, no NaN
    n_ok: int  # elements within tolerance
    n: int  # elements
    max_abs: float  # largest |got - ref| (inf where an infinity or NaN does not match)
    where: tuple  # index of max_abs
    got_at: float  # got[where]
    ref_at: float  # ref[where]
    max_rel: float  # largest |got - ref| / |ref| over finite ratios
    cos_diff: float  # 1 - 2<g, r> / (|g|^2 + |r|^2) over finite pairs
    atol: float
    rtol: float
    max_cos_diff: float | None = None  # part of ok when given (FlashMLA's third tolerance)
    rule: str = "sum"  # "sum": |err| <= atol + rtol|ref|; "either": |err| < atol or |err|/(|ref|+1e-6) < rtol

    @property
    def message(self) -> str:
        if self.n == 0:
            return f"{self.name}: empty"
        cos = "" if self.max_cos_diff is None else f" (at most {self.max_cos_diff:g})"
        rule = "" if self.rule == "sum" else " (abs or rel, FlashMLA's rule)"
        return (f"{self.name}: {'ok' if self.ok else 'MISMATCH'}; max abs err {self.max_abs:.3e} at {self.where} "
                f"(got {self.got_at:.6g}, expected {self.ref_at:.6g}); max rel err {self.max_rel:.3e}; "
                f"tolerance atol={self.atol:g} rtol={self.rtol:g}{rule}; {self.n_ok} of {self.n} elements within "
                f"tolerance; cosine difference {self.cos_diff:.3e}{cos}")

    def __str__(self):
        return self.message


# FlashMLA's tolerances, through kernelkit's check_is_allclose (tests/kernelkit/compare.py): an
# element passes if its abs error < atol OR its rel error |err| / (|ref| + 1e-6) < rtol, and the
# cosine difference of the whole tensor must stay under the third figure.
#   dense decode  (tests/test_flash_mla_dense_decoding.py):  out  abs 8e-4, rel 2.01/128, cos 5e-6
#   sparse decode (tests/test_flash_mla_sparse_decoding.py): out  abs 1e-3, rel 2.01/128, cos 5e-6
#   both:                                                    lse  abs 1e-6, rel 8.01/65536, cos 1e-7
#                                                                 (kernelkit's default cosine)
# rel 2.01/128 is two bf16 steps (bf16 keeps 8 significant bits); 8.01/65536 is eight steps of
# a 16-bit fraction, about 1.2e-4.
FLASHMLA_OUT_TOL = dict(atol=8e-4, rtol=2.01 / 128, max_cos_diff=5e-6, rule="either")
FLASHMLA_SPARSE_OUT_TOL = dict(atol=1e-3, rtol=2.01 / 128, max_cos_diff=5e-6, rule="either")
FLASHMLA_LSE_TOL = dict(atol=1e-6, rtol=8.01 / 65536, max_cos_diff=1e-7, rule="either")
# Prefill (chapter 9), from FlashMLA's prefill tests, same rule:
#   dense MHA prefill, d_qk 192 / d_v 128 (tests/test_fmha_sm100.py, flash_attn_varlen_func):
#                                                 out abs 1e-3, rel 8.01/128, cos 7e-6; lse abs 1e-6, rel 2.01/65536
#   sparse prefill (tests/test-sparse-prefill.py, flash_mla_sparse_fwd):
#                                                 out abs 8e-4, rel 3.01/128, cos 1e-5; lse abs 1e-6, rel 2.01/65536
# Both draw q, k and v as randn/10 (V rms 0.1, as the decode tests); lse cosine: kernelkit's default.
FLASHMLA_PREFILL_OUT_TOL = dict(atol=1e-3, rtol=8.01 / 128, max_cos_diff=7e-6, rule="either")
FLASHMLA_SPARSE_PREFILL_OUT_TOL = dict(atol=8e-4, rtol=3.01 / 128, max_cos_diff=1e-5, rule="either")
FLASHMLA_PREFILL_LSE_TOL = dict(atol=1e-6, rtol=2.01 / 65536, max_cos_diff=1e-7, rule="either")
TOLERANCE_KINDS = {"decode": (FLASHMLA_OUT_TOL, FLASHMLA_LSE_TOL),
                   "sparse": (FLASHMLA_SPARSE_OUT_TOL, FLASHMLA_LSE_TOL),
                   "prefill": (FLASHMLA_PREFILL_OUT_TOL, FLASHMLA_PREFILL_LSE_TOL),
                   "sparse_prefill": (FLASHMLA_SPARSE_PREFILL_OUT_TOL, FLASHMLA_PREFILL_LSE_TOL)}
# Only the out atol carries a unit: it is an absolute error in the units of V. FlashMLA's cases
# draw the cache as randn/10 clamped to [-1, 1] (tests/test_flash_mla_dense_decoding.py
# generate_test_data; tests/lib.py generate_testcase_for_decode): V's rms is 0.1. Ours draw V
# with rms about 1, where the same roundings (P to bf16: 2^-9 relative) give ten times the
# absolute error; gpu_tolerances scales atol by (V rms / 0.1) and keeps the rest -- at
# FlashMLA's own data scale it gives FlashMLA's figures exactly.
FLASHMLA_V_RMS = 0.1


def gpu_tolerances(v_rms: float = FLASHMLA_V_RMS, sparse: bool = False, kind: str | None = None):
    """(out tolerance, lse tolerance) a GPU run is held to, for a case whose V values have
    rms `v_rms` (value_rms): FlashMLA's tolerances for the kind of kernel -- "decode" (the
    default), "sparse" (sparse=True: sparse decode), "prefill" (the expand path's MHA prefill),
    "sparse_prefill" -- the out atol scaled from FlashMLA's data (rms 0.1) to this case's."""
    if not v_rms > 0:
        raise ValueError(f"v_rms must be > 0, got {v_rms}")
    kind = kind or ("sparse" if sparse else "decode")
    if kind not in TOLERANCE_KINDS:
        raise ValueError(f"kind must be one of {sorted(TOLERANCE_KINDS)}, got {kind!r}")
    out_tol, lse_tol = TOLERANCE_KINDS[kind]
    out = dict(out_tol)
    out["atol"] = out["atol"] * v_rms / FLASHMLA_V_RMS
    return out, dict(lse_tol)


# Triton's interpreter runs the kernels in fp32 but truncates (does not round) fp32 -> bf16 on
# the store: up to one bf16 step toward zero on every element, which alone moves the cosine
# difference past FlashMLA's 5e-6. A kernel in the interpreter is held to these instead.
INTERPRETER_OUT_TOL = dict(atol=5e-3, rtol=1e-2, max_cos_diff=1e-4)
INTERPRETER_LSE_TOL = dict(atol=1e-4, rtol=1e-4)


def compare(name, got, ref, atol, rtol, max_cos_diff=None, rule="sum") -> Comparison:
    """FlashMLA-style check of got against ref: elementwise |got-ref| <= atol + rtol*|ref|
    (rule="sum"), or FlashMLA's own rule (rule="either": abs error < atol or rel error < rtol),
    -inf in ref must be -inf in got (and +inf +inf), NaN never passes; with max_cos_diff the
    cosine difference must stay at or under it too. Returns the numbers (a Comparison); its
    .message is the failure text."""
    if rule not in ("sum", "either"):
        raise ValueError(f"rule must be 'sum' or 'either', got {rule!r}")
    got64 = got.detach().to(torch.float64).cpu()
    ref64 = ref.detach().to(torch.float64).cpu()
    if got64.shape != ref64.shape:
        raise ValueError(f"{name}: shape {tuple(got64.shape)}, expected {tuple(ref64.shape)}")
    inf_ref, inf_got = torch.isinf(ref64), torch.isinf(got64)
    same_inf = inf_ref & inf_got & (torch.sign(ref64) == torch.sign(got64))
    g = torch.where(same_inf, torch.zeros_like(got64), got64)
    r = torch.where(same_inf, torch.zeros_like(ref64), ref64)
    err = (g - r).abs()
    err = torch.where(torch.isnan(err), torch.full_like(err, math.inf), err)
    if rule == "sum":
        ok_el = err <= atol + rtol * r.abs()
    else:
        ok_el = (err < atol) | (err / (r.abs() + 1e-6) < rtol)
    n_ok, n = int(ok_el.sum()), ok_el.numel()
    if n == 0:
        return Comparison(name, True, 0, 0, 0.0, (), 0.0, 0.0, 0.0, 0.0, atol, rtol, max_cos_diff, rule)
    rel = err / r.abs().clamp_min(1e-30)
    worst = tuple(int(x) for x in np.unravel_index(int(torch.argmax(err)), tuple(err.shape)))
    fin = torch.isfinite(g) & torch.isfinite(r)
    gf, rf = torch.where(fin, g, 0.0).flatten(), torch.where(fin, r, 0.0).flatten()
    denom = float((gf * gf).sum() + (rf * rf).sum())
    cos_diff = 1 - 2 * float((gf * rf).sum()) / denom if denom > 0 else 0.0
    max_rel = float(rel[torch.isfinite(rel)].max()) if torch.isfinite(rel).any() else 0.0
    ok = n_ok == n and (max_cos_diff is None or cos_diff <= max_cos_diff)
    return Comparison(name, ok, n_ok, n, float(err.max()), worst, float(got64[worst]), float(ref64[worst]),
                      max_rel, cos_diff, atol, rtol, max_cos_diff, rule)


def check_against_references(tag: str, out, lse, ref64, ref_gpu, on_gpu: bool, v_rms: float,
                             sparse: bool = False, kind: str | None = None) -> list:
    """The checks every kernel test, the GPU check's case matrix and the benchmarks' gates make,
    as Comparison records (all must be ok). ref64 = (out, lse) of mode "float64", ref_gpu =
    (out, lse) of mode "gpu".

      1. the GPU-like reference against float64, at the tolerances a GPU run is held to
         (gpu_tolerances(v_rms, sparse, kind)): what a GPU computes passes them -- checked on every
         machine, so that a green CPU run predicts a green GPU run;
      2. the kernel against float64, and 3. against the GPU-like reference, at this machine's
         tolerances: the GPU's (on_gpu) or the interpreter's (INTERPRETER_OUT_TOL / _LSE_TOL).
         In the interpreter the kernel rounds no P, so against the GPU-like reference its out
         also differs by what the GPU's roundings move, which check 1 bounds by the GPU's out
         atol: there the two atols add (|kernel - gpu| <= |kernel - f64| + |f64 - gpu|). Without
         that, a value near 0 whose GPU rounding moves it by 6e-3 in a case of V rms 1.4 (a
         sparse prefill on FP8 rows of the GPU check) failed a kernel that matched float64.

    out = lse = None: no kernel ran (a case whose kernel cannot run here, checked in emulation):
    check 1 only, its two records."""
    if (out is None) != (lse is None):
        raise ValueError("pass both out and lse (a kernel's result) or neither (emulation only)")
    gpu_out, gpu_lse = gpu_tolerances(v_rms, sparse, kind)
    found = [compare(f"GPU-like reference out vs float64 {tag}", ref_gpu[0], ref64[0], **gpu_out),
             compare(f"GPU-like reference lse vs float64 {tag}", ref_gpu[1], ref64[1], **gpu_lse)]
    if out is None:
        return found
    k_out, k_lse = (gpu_out, gpu_lse) if on_gpu else (INTERPRETER_OUT_TOL, INTERPRETER_LSE_TOL)
    k_out_gpu_like = k_out if on_gpu else dict(k_out, atol=k_out["atol"] + gpu_out["atol"])
    where = "GPU" if on_gpu else "interpreter"
    return found + [compare(f"out ({where}) vs float64 {tag}", out, ref64[0], **k_out),
                    compare(f"lse ({where}) vs float64 {tag}", lse, ref64[1], **k_lse),
                    compare(f"out ({where}) vs GPU-like reference {tag}", out, ref_gpu[0], **k_out_gpu_like),
                    compare(f"lse ({where}) vs GPU-like reference {tag}", lse, ref_gpu[1], **k_lse)]


# ---------------------------------------------------------------------------------------
# Prefill (chapter 9): the expand path's MHA, the chunked prefix, the absorbed sparse prefill
# ---------------------------------------------------------------------------------------

def gpu_mha(q64: torch.Tensor, k64: torch.Tensor, v64: torch.Tensor, scale: float, operands: torch.dtype,
            visible: torch.Tensor | None = None):
    """The GPU-like softmax attention of one sequence with per-head keys (the expand path): q64
    [h, s, d_qk], k64 [h, n, d_qk], v64 [h, n, d_v] (the values as stored), visible [s, n] or None.
    Rounds as gpu_attention does (operands, S to float32, P to operands before P V, l of the
    unrounded P). Returns out [s, h, d_v] and lse [h, s], float64, not yet rounded."""
    q_op, k_op, v_op = (round_to(x, operands) for x in (q64, k64, v64))
    scores = round_to(torch.einsum("hsd,hnd->hsn", q_op, k_op), torch.float32) * scale  # [h, s, n]
    if visible is not None:
        scores = scores.masked_fill(~visible[None], -math.inf)
    m = scores.amax(dim=-1, keepdim=True) if scores.shape[-1] else torch.full(scores.shape[:-1] + (1,), -math.inf,
                                                                               dtype=torch.float64, device=q64.device)
    seen = torch.isfinite(m)
    p = torch.where(seen, torch.exp(scores - torch.where(seen, m, 0.0)), 0.0)
    l_sum = p.sum(dim=-1, keepdim=True)
    out = torch.einsum("hsn,hnd->shd", round_to(p, operands), v_op) / torch.where(seen, l_sum, 1.0).transpose(0, 1)
    lse = torch.where(seen, m + torch.log(torch.where(seen, l_sum, 1.0)), -math.inf)[..., 0]
    return out, lse


def _visible(n_q: int, n_k: int, causal: bool) -> torch.Tensor:
    from mlacourse.prefill import visible_keys
    return torch.arange(n_k)[None, :] < torch.from_numpy(visible_keys(n_q, n_k, causal))[:, None]  # [n_q, n_k]


def reference_prefill(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale=None, causal=True, seqused_k=None,
                      mode="float64", operands=None):
    """The expand path's prefill (kernels.mla_prefill's call) on the CPU: q [total_q, h, 192], k
    [total_k, h, 192], v [total_k, h, 128] -> out [total_q, h, 128], lse [h, total_q]. mode
    "float64": mlacourse.prefill.prefill_attention (numpy), both float64 (rows outside every
    sequence: 0 and -inf). mode "gpu": the GPU-like reference (gpu_mha per sequence), out in q's
    dtype, lse float32."""
    from mlacourse.prefill import prefill_attention
    _check_mode(mode, operands)
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    cq, ck = cu_seqlens_q.cpu().long(), cu_seqlens_k.cpu().long()
    used = None if seqused_k is None else seqused_k.cpu().long()
    if mode == "float64":
        out, lse = prefill_attention(q.detach().double().cpu().numpy(), k.detach().double().cpu().numpy(),
                                     v.detach().double().cpu().numpy(), cq.numpy(), ck.numpy(), scale, causal,
                                     None if used is None else used.numpy())
        return torch.from_numpy(out), torch.from_numpy(lse)
    ops = operands or q.dtype
    total_q, h, _ = q.shape
    out = torch.zeros(total_q, h, v.shape[2], dtype=torch.float64)
    lse = torch.full((h, total_q), -math.inf, dtype=torch.float64)
    q64, k64, v64 = (x.detach().double().cpu() for x in (q, k, v))
    for i in range(cq.numel() - 1):
        a, nq, c = int(cq[i]), int(cq[i + 1] - cq[i]), int(ck[i])
        nk = int(ck[i + 1] - ck[i]) if used is None else int(used[i])
        if nq == 0:
            continue
        o, l_ = gpu_mha(q64[a:a + nq].transpose(0, 1), k64[c:c + nk].transpose(0, 1), v64[c:c + nk].transpose(0, 1),
                        scale, ops, _visible(nq, nk, causal))
        out[a:a + nq], lse[:, a:a + nq] = o, l_
    return out.to(q.dtype), lse.to(torch.float32)


def expand_latents(c64: torch.Tensor, k_rope64: torch.Tensor, w_uk64: torch.Tensor, w_uv64: torch.Tensor,
                   store: torch.dtype | None = None):
    """Per-head K [h, n, 192] (c W_UK | k_rope) and V [h, n, 128] (c W_UV) of latent rows c64 [n,
    512], k_rope64 [n, 64] (mlacourse.layer.expand_kv). store: the workspace's type -- the exact
    product rounded to it (round_to: through float32, the kernel's accumulator, to nearest); None:
    exact float64."""
    from mlacourse.layer import expand_kv
    k, v = expand_kv(c64.numpy(), k_rope64.numpy(), w_uk64.numpy(), w_uv64.numpy())
    k, v = torch.from_numpy(np.ascontiguousarray(k)), torch.from_numpy(np.ascontiguousarray(v))
    if store is not None:  # the rope part is copied from the cache row, not computed: already stored
        k = torch.cat([round_to(k[..., :-k_rope64.shape[1]], store), k[..., -k_rope64.shape[1]:]], dim=-1)
        v = round_to(v, store)
    return k, v


def reference_prefix_prefill(q, kv_cache, block_table, cache_seqlens, cu_seqlens_q, w_uk, w_uv, softmax_scale=None,
                             mode="float64", operands=None, chunk_tokens=None, workspace_dtype="default"):
    """The chunked prefix context (kernels.prefill_context's call) on the CPU: q [total_q, h, 192],
    the latent cache, w_uk / w_uv [h, 512, 128] -> out [total_q, h, 128], lse [h, total_q].

    workspace_dtype: the type the expanded K and V are stored in before the attention reads them
    (K = c W_UK | k_rope, V = c W_UV, accumulated in float32 then rounded to it, to nearest; the
    rope part is copied). None: not rounded. The default: None in mode "float64", q's dtype in
    mode "gpu" (what the kernels store on a GPU; in Triton's interpreter they store float32).
    mode "float64": per sequence mlacourse.layer.attend_expand over its whole context (prefix and
    new tokens, bottom-right causal), on K/V rounded to workspace_dtype if one is given -- no
    chunks; both float64. The exact math is workspace_dtype=None; with the kernels' bf16 workspace
    the lse moves by at most 2^-8 * scale * sum_d |q_d k_d| over the rounded dims (the largest
    score change; tests/test_kernel_prefill_context.py checks the bound).
    mode "gpu": what the kernels compute, rounded where they round (kernels/prefill_context.py):
    the new tokens' part and every chunk of chunk_tokens (mlacourse.prefill.context_chunks)
    attended by gpu_mha, each partial result float32, merged pairwise in float32, the last merge
    rounded to q's dtype; out in q's dtype, lse float32."""
    from mlacourse.attention import causal_mask, merge_attention
    from mlacourse.prefill import context_chunks
    _check_mode(mode, operands)
    if workspace_dtype == "default":
        workspace_dtype = q.dtype if mode == "gpu" else None
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    ops = operands or q.dtype
    cq = cu_seqlens_q.cpu().long()
    b = cq.numel() - 1
    total_q, h, d_qk = q.shape
    d_v, d_nope = w_uv.shape[-1], w_uk.shape[-1]
    wk, wv = w_uk.detach().double().cpu(), w_uv.detach().double().cpu()
    q64 = q.detach().double().cpu()
    out = torch.zeros(total_q, h, d_v, dtype=torch.float64)
    lse = torch.full((h, total_q), -math.inf, dtype=torch.float64)
    n_new = (cq[1:] - cq[:-1]).tolist()
    lens = cache_seqlens.cpu().long().tolist()
    prefixes = [n - s for n, s in zip(lens, n_new)]
    if mode == "gpu":
        if chunk_tokens is None:
            raise ValueError("mode='gpu' merges chunk by chunk: pass the call's chunk_tokens")
        per_seq, iterations = context_chunks(max(b, 1), max(prefixes, default=0), chunk_tokens, kv_cache.shape[1])
    for i in range(b):
        a, s, n = int(cq[i]), n_new[i], lens[i]
        if s == 0:
            continue
        rows = gather_sequence(kv_cache, block_table, cache_seqlens, i)  # [n, 576] float64
        c, kr = rows[:, :-(d_qk - d_nope)], rows[:, -(d_qk - d_nope):]
        qi = q64[a:a + s]  # [s, h, 192]
        k_all, v_all = expand_latents(c, kr, wk, wv, store=workspace_dtype)  # [h, n, 192], [h, n, 128]
        if mode == "float64":
            scores_mask = torch.from_numpy(causal_mask(s, n))  # [s, n]
            o, l_ = _np_attention(qi.transpose(0, 1), k_all, v_all, scale, scores_mask)
            out[a:a + s], lse[:, a:a + s] = o.transpose(0, 1), l_
            continue
        p = n - s  # the prefix
        o, l_ = gpu_mha(qi.transpose(0, 1), k_all[:, p:], v_all[:, p:], scale, ops, _visible(s, s, True))
        run_o, run_l = round_to(o, torch.float32), round_to(l_, torch.float32)  # [s, h, d_v], [h, s]
        for j in range(iterations):
            lo, hi = min(j * per_seq, p), min((j + 1) * per_seq, p)
            o, l_ = gpu_mha(qi.transpose(0, 1), k_all[:, lo:hi], v_all[:, lo:hi], scale, ops)
            o, l_ = round_to(o, torch.float32), round_to(l_, torch.float32)
            mo, ml = merge_attention([run_o.transpose(0, 1).numpy(), o.transpose(0, 1).numpy()],
                                     [run_l.numpy(), l_.numpy()])  # [h, s, d_v], [h, s]
            run_o = round_to(torch.from_numpy(mo).transpose(0, 1), torch.float32)
            run_l = round_to(torch.from_numpy(ml), torch.float32)
        out[a:a + s], lse[:, a:a + s] = run_o, run_l
    if mode == "gpu":
        return out.to(q.dtype), lse.to(torch.float32)
    return out, lse


def _np_attention(q64, k64, v64, scale, mask):
    """Softmax attention in float64 through mlacourse.attention.attention (numpy): q [h, s, d],
    k [h, n, d], v [h, n, d_v], mask [s, n] -> out [h, s, d_v], lse [h, s] (torch)."""
    from mlacourse.attention import attention as np_attention
    o, l_ = np_attention(q64.numpy(), k64.numpy(), v64.numpy(), scale, mask.numpy())
    return torch.from_numpy(o), torch.from_numpy(l_)


def reference_sparse_prefill(q, kv, indices, sm_scale=None, mode="float64", operands=None):
    """The absorbed sparse prefill (kernels.sparse_prefill's call) on the CPU: q [s_q, h_q, 576],
    kv [s_kv, 1, 576] rows in q's dtype or uint8 [s_kv, 1, 656] FP8 rows, indices [s_q, 1, topk]
    (a negative value or one >= s_kv: no key) -> out [s_q, h_q, 512], lse [s_q, h_q]. mode
    "float64": mlacourse.prefill.sparse_prefill (numpy; FP8 rows dequantized exactly by
    mlacourse.fp8), both float64; mode "gpu": the GPU-like reference (FP8 rows dequantized in
    float32 then rounded to the operands, P rounded before P V), out in q's dtype, lse float32."""
    from mlacourse.prefill import sparse_prefill
    _check_mode(mode, operands)
    scale = sm_scale if sm_scale is not None else q.shape[-1] ** -0.5
    fp8 = kv.dtype == torch.uint8
    rows = torch.from_numpy(np_fp8.unpack_fp8_row(kv.detach().cpu().numpy()[:, 0])) if fp8 else \
        kv.detach().double().cpu()[:, 0]  # [s_kv, 576] exact values
    idx = indices.detach().cpu().long()
    if mode == "float64":
        out, lse = sparse_prefill(q.detach().double().cpu().numpy(), rows[:, None].numpy(), idx.numpy(), scale)
        return torch.from_numpy(out), torch.from_numpy(lse)
    ops = operands or q.dtype
    s_q, h_q, _ = q.shape
    out = torch.zeros(s_q, h_q, D_LATENT, dtype=torch.float64)
    lse = torch.full((s_q, h_q), -math.inf, dtype=torch.float64)
    q64 = q.detach().double().cpu()
    for t in range(s_q):
        keys = idx[t, 0][(idx[t, 0] >= 0) & (idx[t, 0] < rows.shape[0])]
        if keys.numel() == 0:
            continue
        kvr = gpu_rows(rows[keys], ops, fp8)  # [n, 576]
        o, l_ = gpu_attention(q64[t][:, None], kvr, scale, ops, D_LATENT)  # [1, h, 512], [h, 1]
        out[t], lse[t] = o[0], l_[:, 0]
    return out.to(q.dtype), lse.to(torch.float32)


# ---- the prefill references on the device, batched: the prefill benchmark's gate ------------------

def _exact_mha(q64, k64, v64, scale, visible=None):
    """float64 softmax attention with per-head keys on any device: q [h, s, d], k [h, n, d], v [h, n,
    d_v], visible [s, n] -> out [s, h, d_v], lse [h, s]; a row that sees nothing: 0 and -inf."""
    scores = torch.einsum("hsd,hnd->hsn", q64, k64) * scale
    if visible is not None:
        scores = scores.masked_fill(~visible[None], -math.inf)
    lse = torch.logsumexp(scores, dim=-1) if scores.shape[-1] else \
        torch.full(scores.shape[:-1], -math.inf, dtype=torch.float64, device=q64.device)
    p = torch.exp(scores - lse[..., None]).nan_to_num(0.0)
    return torch.einsum("hsn,hnd->shd", p, v64), lse


def _heads_per_step(n_q: int, n_k: int, h: int, max_bytes: int) -> int:
    return max(1, min(h, max_bytes // max(1, 4 * 8 * n_q * n_k)))  # scores, p and two temporaries in float64


def reference_prefill_batched(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale=None, causal=True, seqused_k=None,
                              mode="float64", operands=None, max_bytes: int = 2**31):
    """reference_prefill on q's device (the prefill benchmark's gate): per sequence, a few heads at a
    time so the float64 scores stay under max_bytes. mode "float64": both float64; mode "gpu": the
    GPU-like reference (gpu_mha), out in q's dtype, lse float32. Reads cu_seqlens on the host."""
    _check_mode(mode, operands)
    ops = operands or q.dtype
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    total_q, h, _ = q.shape
    dev = q.device
    out = torch.zeros(total_q, h, v.shape[2], dtype=torch.float64, device=dev)
    lse = torch.full((h, total_q), -math.inf, dtype=torch.float64, device=dev)
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    used = None if seqused_k is None else seqused_k.tolist()
    for i in range(len(cq) - 1):
        a, nq, c = cq[i], cq[i + 1] - cq[i], ck[i]
        nk = ck[i + 1] - c if used is None else used[i]
        if nq == 0:
            continue
        visible = _visible(nq, nk, causal).to(dev)
        step = _heads_per_step(nq, nk, h, max_bytes)
        for h0 in range(0, h, step):
            qh = q[a:a + nq, h0:h0 + step].double().transpose(0, 1)
            kh, vh = k[c:c + nk, h0:h0 + step].double().transpose(0, 1), v[c:c + nk, h0:h0 + step].double().transpose(0, 1)
            o, l_ = gpu_mha(qh, kh, vh, scale, ops, visible) if mode == "gpu" else _exact_mha(qh, kh, vh, scale, visible)
            out[a:a + nq, h0:h0 + step], lse[h0:h0 + step, a:a + nq] = o, l_
    return (out.to(q.dtype), lse.to(torch.float32)) if mode == "gpu" else (out, lse)


def reference_prefix_prefill_batched(q, kv_cache, block_table, cache_seqlens, cu_seqlens_q, w_uk, w_uv,
                                     softmax_scale=None, mode="float64", operands=None, workspace_dtype="default",
                                     max_bytes: int = 2**31):
    """reference_prefix_prefill on q's device (the prefill benchmark's gate): per sequence its latent
    rows gathered from the pages, expanded in float64 (rounded to workspace_dtype: as
    reference_prefix_prefill), then attention over the whole context a few heads at a time. mode
    "gpu" runs gpu_mha over the whole context at once -- the chunks' partial results and merges
    are float32 (2^-24) steps the kernels take and this does not: of the same size as the
    roundings it models, not the same bits (as the decode reference's running max)."""
    _check_mode(mode, operands)
    if workspace_dtype == "default":
        workspace_dtype = q.dtype if mode == "gpu" else None
    ops = operands or q.dtype
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    total_q, h, d_qk = q.shape
    d_nope, d_v = w_uk.shape[-1], w_uv.shape[-1]
    d_rope = d_qk - d_nope
    dev = q.device
    out = torch.zeros(total_q, h, d_v, dtype=torch.float64, device=dev)
    lse = torch.full((h, total_q), -math.inf, dtype=torch.float64, device=dev)
    cq, lens = cu_seqlens_q.tolist(), cache_seqlens.tolist()
    page = kv_cache.shape[1]
    for i in range(len(cq) - 1):
        a, s, n = cq[i], cq[i + 1] - cq[i], lens[i]
        if s == 0:
            continue
        pages = block_table[i, :-(-n // page)].long()
        rows = kv_cache[pages, :, 0].reshape(-1, kv_cache.shape[-1])[:n].double()  # [n, 576]
        c, kr = rows[:, :-d_rope], rows[:, -d_rope:]
        visible = _visible(s, n, True).to(dev)
        step = _heads_per_step(s, n, h, max_bytes)
        for h0 in range(0, h, step):
            k_nope = torch.einsum("nl,hld->hnd", c, w_uk[h0:h0 + step].double())  # [hh, n, 128]
            vh = torch.einsum("nl,hld->hnd", c, w_uv[h0:h0 + step].double())
            if workspace_dtype is not None:
                k_nope, vh = round_to(k_nope, workspace_dtype), round_to(vh, workspace_dtype)
            kh = torch.cat([k_nope, kr[None].expand(k_nope.shape[0], -1, -1)], dim=-1)  # [hh, n, 192]
            qh = q[a:a + s, h0:h0 + step].double().transpose(0, 1)
            o, l_ = gpu_mha(qh, kh, vh, scale, ops, visible) if mode == "gpu" else _exact_mha(qh, kh, vh, scale, visible)
            out[a:a + s, h0:h0 + step], lse[h0:h0 + step, a:a + s] = o, l_
    return (out.to(q.dtype), lse.to(torch.float32)) if mode == "gpu" else (out, lse)


def reference_sparse_prefill_batched(q, kv, indices, sm_scale=None, mode="float64", operands=None,
                                     max_bytes: int = 2**30):
    """reference_sparse_prefill on q's device (the prefill benchmark's gate), the query tokens a chunk
    at a time (their gathered float64 rows under max_bytes). Rows in q's dtype or FP8 rows (dequantized
    exactly: code * scale in float64, then the GPU-like rounding in mode "gpu")."""
    from . import fp8 as torch_fp8
    _check_mode(mode, operands)
    ops = operands or q.dtype
    scale = sm_scale if sm_scale is not None else q.shape[-1] ** -0.5
    s_q, h_q, d_qk = q.shape
    topk = indices.shape[-1]
    fp8 = kv.dtype == torch.uint8
    n_rows = kv.shape[0]
    out = torch.zeros(s_q, h_q, D_LATENT, dtype=torch.float64, device=q.device)
    lse = torch.full((s_q, h_q), -math.inf, dtype=torch.float64, device=q.device)
    chunk = max(1, int(max_bytes // (8 * topk * (d_qk + 2 * h_q))))
    for t0 in range(0, s_q, chunk):
        idx = indices[t0:t0 + chunk, 0].long()  # [T, topk]
        valid = (idx >= 0) & (idx < n_rows)
        rows = kv[torch.where(valid, idx, torch.zeros_like(idx)), 0]  # [T, topk, 576 or 656]
        vals = torch_fp8.unpack_fp8_rows(rows).double() if fp8 else rows.double()
        if fp8:  # unpack_fp8_rows gives float32 code * scale: recompute it exactly in float64
            codes = rows[..., :D_LATENT].contiguous().view(torch.float8_e4m3fn).double()
            scales = rows[..., D_LATENT:D_LATENT + 4 * (D_LATENT // np_fp8.TILE)].contiguous().view(torch.float32).double()
            lat = (codes.reshape(*codes.shape[:2], -1, np_fp8.TILE) * scales[..., None]).reshape(codes.shape)
            vals = torch.cat([lat, vals[..., D_LATENT:]], dim=-1)
        if mode == "gpu":
            vals = gpu_rows(vals, ops, fp8)
        vals = torch.where(valid[..., None], vals, 0.0)  # rows of invalid entries never count
        qd = q[t0:t0 + chunk].double()
        qd = round_to(qd, ops) if mode == "gpu" else qd
        scores = torch.einsum("thd,tnd->thn", qd, vals)
        scores = (round_to(scores, torch.float32) if mode == "gpu" else scores) * scale
        scores = scores.masked_fill(~valid[:, None, :], -math.inf)
        m = scores.amax(dim=-1, keepdim=True)
        seen = torch.isfinite(m)
        p = torch.where(seen, torch.exp(scores - torch.where(seen, m, 0.0)), 0.0)
        l_sum = p.sum(dim=-1, keepdim=True)
        pv = round_to(p, ops) if mode == "gpu" else p
        out[t0:t0 + chunk] = torch.einsum("thn,tnd->thd", pv, vals[..., :D_LATENT]) / torch.where(seen, l_sum, 1.0)
        lse[t0:t0 + chunk] = torch.where(seen, m + torch.log(torch.where(seen, l_sum, 1.0)), -math.inf)[..., 0]
    return (out.to(q.dtype), lse.to(torch.float32)) if mode == "gpu" else (out, lse)
