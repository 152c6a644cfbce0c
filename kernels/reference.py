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
# Only the out atol carries a unit: it is an absolute error in the units of V. FlashMLA's cases
# draw the cache as randn/10 clamped to [-1, 1] (tests/test_flash_mla_dense_decoding.py
# generate_test_data; tests/lib.py generate_testcase_for_decode): V's rms is 0.1. Ours draw V
# with rms about 1, where the same roundings (P to bf16: 2^-9 relative) give ten times the
# absolute error; gpu_tolerances scales atol by (V rms / 0.1) and keeps the rest -- at
# FlashMLA's own data scale it gives FlashMLA's figures exactly.
FLASHMLA_V_RMS = 0.1


def gpu_tolerances(v_rms: float = FLASHMLA_V_RMS, sparse: bool = False):
    """(out tolerance, lse tolerance) a GPU run is held to, for a case whose V values have
    rms `v_rms` (value_rms): FlashMLA's dense (or sparse) decode tolerances, out atol scaled
    from FlashMLA's data (rms 0.1) to this case's."""
    if not v_rms > 0:
        raise ValueError(f"v_rms must be > 0, got {v_rms}")
    out = dict(FLASHMLA_SPARSE_OUT_TOL if sparse else FLASHMLA_OUT_TOL)
    out["atol"] = out["atol"] * v_rms / FLASHMLA_V_RMS
    return out, dict(FLASHMLA_LSE_TOL)


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
                             sparse: bool = False) -> list:
    """The checks every kernel test, the GPU check's case matrix and the benchmarks' gates make,
    as Comparison records (all must be ok). ref64 = (out, lse) of mode "float64", ref_gpu =
    (out, lse) of mode "gpu".

      1. the GPU-like reference against float64, at the tolerances a GPU run is held to
         (gpu_tolerances(v_rms, sparse)): what a GPU computes passes them -- checked on every
         machine, so that a green CPU run predicts a green GPU run;
      2. the kernel against float64, and 3. against the GPU-like reference, at this machine's
         tolerances: the GPU's (on_gpu) or the interpreter's (INTERPRETER_OUT_TOL / _LSE_TOL).

    out = lse = None: no kernel ran (a case whose kernel cannot run here, checked in emulation):
    check 1 only, its two records."""
    if (out is None) != (lse is None):
        raise ValueError("pass both out and lse (a kernel's result) or neither (emulation only)")
    gpu_out, gpu_lse = gpu_tolerances(v_rms, sparse)
    found = [compare(f"GPU-like reference out vs float64 {tag}", ref_gpu[0], ref64[0], **gpu_out),
             compare(f"GPU-like reference lse vs float64 {tag}", ref_gpu[1], ref64[1], **gpu_lse)]
    if out is None:
        return found
    k_out, k_lse = (gpu_out, gpu_lse) if on_gpu else (INTERPRETER_OUT_TOL, INTERPRETER_LSE_TOL)
    where = "GPU" if on_gpu else "interpreter"
    return found + [compare(f"out ({where}) vs float64 {tag}", out, ref64[0], **k_out),
                    compare(f"lse ({where}) vs float64 {tag}", lse, ref64[1], **k_lse),
                    compare(f"out ({where}) vs GPU-like reference {tag}", out, ref_gpu[0], **k_out),
                    compare(f"lse ({where}) vs GPU-like reference {tag}", lse, ref_gpu[1], **k_lse)]
