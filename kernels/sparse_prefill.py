"""Absorbed sparse prefill (DeepSeek-V3.2's sparse attention for a whole prompt), FlashMLA's
flash_mla_sparse_fwd calling convention, run by chapter 8's sparse decode kernel.

  q        [s_q, h_q, 576]            absorbed queries (q_lat | q_rope), bf16 or fp16
  kv       [s_kv, 1, 576]             latent rows in q's dtype (FlashMLA's prefill reads bf16 rows), or
           uint8 [s_kv, 1, 656]       FlashMLA's FP8 rows (the decode cache's; dequantized in registers)
  indices  int32 [s_q, 1, topk]       the rows of kv each query attends to; -1 (any negative) or any
                                      value >= s_kv is "no key" (FlashMLA's rule: its ref.py masks
                                      indices < 0 or >= s_kv); duplicates count twice
  out      [s_q, h_q, 512]            q's dtype
  lse      [s_q, h_q] float32         natural log (a view with strides (1, s_q)); -inf, out 0, for a
                                      query with no valid index (FlashMLA: +inf, see sparse_decode.py)

Why this is the decode kernel. After absorption every query head attends to the same 576-wide
latent rows (an MQA): FlashMLA's sparse prefill gives one CTA the heads of one query token and
walks that token's top-k rows -- exactly what kernels/sparse_decode.py's program does for one
(head block, query token). A prefill is a decode call whose "batch" is the prompt's tokens: each
query token becomes a sequence of one token (b = s_q, s_q = 1), its index list [1, topk], and the
decode call's lse [b, h_q, 1] is the prefill's [s_q, h_q]. So this module adds only: rows in q's
dtype beside the FP8 ones (the kernel's IS_FP8), entries outside 0 .. s_kv - 1 as "no key"
(ROW_LIMIT: so no index can send a load outside kv, and no host check is needed), the
cut of a long prompt into launches of at most 65,535 tokens (a grid's second axis), and the
checks. The top-k split for small token counts, the combine and batch invariance come with the
kernel. What does not carry over: FlashMLA's `max_logits` output (a training quantity) is not
returned, and neither attn_sink nor topk_length is taken.

Two programs per query token at h_q = 128 (BLOCK_M = 64 heads each) both load the token's rows:
twice the row traffic of one 128-row tile, which the registers do not hold (kernels/BENCHMARKS.md)."""
from __future__ import annotations

import torch

from .dims import D_K, D_LATENT, FP8_ROW_BYTES, LOG2E
from .launch import interpreting
from .sparse_decode import MAX_GRID_Y, SparseCall
from .sparse_decode import launches as sparse_decode_launches


def launches(call: SparseCall) -> list:
    """The launches of one slice of a sparse prefill (the launcher of PREFILL_TABLE's
    "prefill_sparse" row): the sparse decode kernel's, labelled as this version's."""
    call.name = "prefill_sparse"
    return sparse_decode_launches(call)


def _check(q, kv, indices, d_v):
    if q.dim() != 3 or q.shape[2] != D_K:
        raise ValueError(f"q must be [s_q, h_q, {D_K}] (512 latent + 64 rope, absorbed query), got shape "
                         f"{tuple(q.shape)}")
    s_q, h_q, _ = q.shape
    if d_v != D_LATENT:
        raise ValueError(f"d_v must be {D_LATENT} (V = the first 512 numbers of each row), got {d_v}")
    if q.dtype not in (torch.bfloat16, torch.float16):
        raise TypeError(f"q must be bfloat16 or float16, got {q.dtype}")
    if not 1 <= h_q <= 128:
        raise ValueError(f"h_q must be in 1..128, got {h_q}")
    fp8 = kv.dtype == torch.uint8
    want = FP8_ROW_BYTES if fp8 else D_K
    if kv.dim() != 3 or kv.shape[1] != 1 or kv.shape[2] != want or (not fp8 and kv.dtype != q.dtype):
        raise TypeError(f"kv must be [s_kv, 1, {D_K}] in q's dtype ({q.dtype}) or uint8 [s_kv, 1, {FP8_ROW_BYTES}] "
                        f"(FP8 rows), got {kv.dtype} {tuple(kv.shape)}")
    if kv.shape[0] < 1:
        raise ValueError("kv must hold at least one row")
    if not kv.is_contiguous() or (fp8 and kv.data_ptr() % 16):
        raise ValueError("kv must be contiguous (FP8 rows also 16-byte aligned: their scales are read as float32)")
    if indices.dtype != torch.int32 or indices.dim() != 3 or tuple(indices.shape[:2]) != (s_q, 1) \
            or indices.shape[2] < 1:
        raise TypeError(f"indices must be int32 [s_q={s_q}, 1, topk >= 1], got {indices.dtype} {tuple(indices.shape)}")
    if indices.stride(2) != 1:
        raise ValueError(f"each query's index list must be contiguous, got strides {indices.stride()}")
    if not q.is_contiguous():
        raise ValueError(f"q must be contiguous (call .contiguous() first); got strides {q.stride()}")
    if len({t.device for t in (q, kv, indices)}) != 1:
        raise ValueError("q, kv and indices must be on one device")


def prepare(q, kv, indices, sm_scale=None, d_v=D_LATENT, gpu=None, launcher=None, **options):
    """Check the inputs and build the launches of one sparse prefill without running them.
    Returns (launches, out, lse): out [s_q, h_q, 512], lse [s_q, h_q] (allocated, not yet written).
    A prompt of more than 65,535 tokens is cut into launches of that many (a grid's second axis)."""
    _check(q, kv, indices, d_v)
    batch_invariant = bool(options.pop("batch_invariant", False))
    scale = sm_scale if sm_scale is not None else D_K ** -0.5
    s_q, h_q, _ = q.shape
    out = torch.empty(s_q, 1, h_q, D_LATENT, dtype=q.dtype, device=q.device)  # the decode call's [b, s_q=1, h_q, 512]
    lse = torch.empty(s_q, h_q, 1, dtype=torch.float32, device=q.device)  # its [b, h_q, s_q=1]
    cache = kv[None]  # [1, s_kv, 1, row]: one page of s_kv rows, so a physical index is the row number
    gpu = (not interpreting()) if gpu is None else gpu
    found = []
    for t0 in range(0, s_q, MAX_GRID_Y):
        t1 = min(t0 + MAX_GRID_Y, s_q)
        call = SparseCall(q[t0:t1, None], cache, indices[t0:t1], out[t0:t1], lse[t0:t1], float(scale) * LOG2E,
                          dict(options), gpu, batch_invariant, is_fp8=kv.dtype == torch.uint8, row_limit=True)
        found += (launcher or launches)(call)
        left = call.options
    if s_q == 0:
        left = dict(options)
    if left:
        raise TypeError(f"unknown option(s) for the sparse prefill: {sorted(left)}")
    return found, out[:, 0], lse[:, :, 0]


def sparse_mla_prefill(q, kv, indices, sm_scale=None, d_v=D_LATENT, **options):
    """Absorbed sparse prefill (module docstring), FlashMLA's flash_mla_sparse_fwd without its
    max_logits. Returns (out [s_q, h_q, 512] in q's dtype, lse [s_q, h_q] float32, natural log).
    options (as sparse_decode's): num_splits, num_sms, batch_invariant, block_m, block_n, num_warps,
    num_stages."""
    found, out, lse = prepare(q, kv, indices, sm_scale, d_v, **options)
    for launch in found:
        launch()
    return out, lse
