"""Torch reference for paged MLA decode, in the kernel's calling convention.

`reference_decode` is the exact one the tests use: per sequence it gathers only the
pages it needs (mlacourse.paged's rule), dequantizes FP8 rows with the numpy
mlacourse.fp8 (an implementation independent of kernels.fp8), and computes in float64.
`reference_decode_padded` is a batched version for timing on a GPU (float32)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from mlacourse import fp8 as np_fp8

from .dims import D_K, D_LATENT


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
                     causal=False, is_fp8_kvcache=False):
    """q [b, s_q, h_q, 576] -> out [b, s_q, h_q, 512] float64, lse [b, h_q, s_q] float64 (CPU).
    Rows that see no key: out 0, lse -inf."""
    b, s_q, h_q, d_k = q.shape
    scale = softmax_scale if softmax_scale is not None else d_k ** -0.5
    out = torch.zeros(b, s_q, h_q, head_dim_v, dtype=torch.float64)
    lse = torch.full((b, h_q, s_q), -math.inf, dtype=torch.float64)
    for i in range(b):
        kv = gather_sequence(kv_cache, block_table, cache_seqlens, i, is_fp8_kvcache)  # [n, 576]
        n = kv.shape[0]
        qi = q[i].to(torch.float64).cpu()  # [s_q, h_q, 576]
        scores = torch.einsum("shd,nd->hsn", qi, kv) * scale  # [h_q, s_q, n]
        if causal:
            rows = torch.arange(s_q)[:, None]
            visible = torch.arange(n)[None, :] <= rows + (n - s_q)  # [s_q, n], bottom-right aligned
            scores = scores.masked_fill(~visible[None], -math.inf)
        row_lse = torch.logsumexp(scores, dim=-1)  # [h_q, s_q]; -inf where nothing is visible
        seen = torch.isfinite(row_lse)
        p = torch.where(seen[..., None], torch.exp(scores - row_lse[..., None]), torch.zeros_like(scores))
        out[i] = torch.einsum("hsn,nd->shd", p, kv[:, :head_dim_v])
        lse[i] = torch.where(seen, row_lse, torch.full_like(row_lse, -math.inf))
    return out, lse


def reference_decode_padded(q, kv_cache, block_table, cache_seqlens, head_dim_v=D_LATENT, softmax_scale=None,
                            causal=False, is_fp8_kvcache=False, dtype=torch.float32, exact=False):
    """Batched reference on q's device: gathers every sequence's pages into [b, max_blocks*P,
    576] and masks the padding. Table entries past a sequence's need are replaced by page 0
    before the gather, so they are never dereferenced; rows past a sequence's end are zeroed
    (they may hold NaN poison, and 0 * NaN is NaN). exact=False (timing): out in q's dtype,
    lse float32; exact=True (the benchmark's gate, with dtype=torch.float64): both in `dtype`."""
    from . import fp8 as torch_fp8

    b, s_q, h_q, d_k = q.shape
    page = kv_cache.shape[1]
    scale = softmax_scale if softmax_scale is not None else d_k ** -0.5
    max_blocks = block_table.shape[1]
    need = (cache_seqlens.long() + page - 1) // page  # [b]
    used = torch.arange(max_blocks, device=q.device)[None, :] < need[:, None]
    ids = torch.where(used, block_table.long(), torch.zeros_like(block_table.long()))  # [b, max_blocks]
    rows = kv_cache[ids][:, :, :, 0]  # [b, max_blocks, P, 576 or 656]
    kv = torch_fp8.unpack_fp8_rows(rows) if is_fp8_kvcache else rows
    kv = kv.reshape(b, max_blocks * page, d_k).to(dtype)  # [b, s_k_max, 576]
    s_k = kv.shape[1]
    valid = torch.arange(s_k, device=q.device)[None, :] < cache_seqlens.long()[:, None]  # [b, s_k_max]
    kv = torch.where(valid[..., None], kv, torch.zeros((), dtype=dtype, device=q.device))
    scores = torch.einsum("bshd,bnd->bhsn", q.to(dtype), kv) * scale  # [b, h_q, s_q, s_k]
    pos = torch.arange(s_k, device=q.device)
    limit = cache_seqlens.long()[:, None] - (s_q - 1 - torch.arange(s_q, device=q.device))[None, :] \
        if causal else cache_seqlens.long()[:, None].expand(b, s_q)  # [b, s_q] visible keys per row
    visible = pos[None, None, :] < limit[:, :, None]  # [b, s_q, s_k]
    scores = scores.masked_fill(~visible[:, None], -math.inf)
    lse = torch.logsumexp(scores, dim=-1)  # [b, h_q, s_q]
    p = torch.exp(scores - lse[..., None]).nan_to_num(0.0)
    out = torch.einsum("bhsn,bnd->bshd", p, kv[..., :head_dim_v])  # [b, s_q, h_q, 512]
    if exact:
        return out, lse
    return out.to(q.dtype), lse.float()


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


# FlashMLA's tolerances (tests/test_flash_mla_dense_decoding.py, through kernelkit's
# check_is_allclose: an element passes if its abs error < atol OR its rel error < rtol; the
# cosine difference of the whole tensor must stay under the third figure -- 5e-6 given for out,
# kernelkit's default 1e-7 for lse).
FLASHMLA_OUT_TOL = dict(atol=8e-4, rtol=2.01 / 128, max_cos_diff=5e-6, rule="either")
FLASHMLA_LSE_TOL = dict(atol=1e-6, rtol=8.01 / 65536, max_cos_diff=1e-7, rule="either")


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
