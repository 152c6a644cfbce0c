"""Sparse MLA decode (DeepSeek Sparse Attention, DeepSeek-V3.2) in Triton, in FlashMLA's
sparse calling convention: `indices` instead of a block table.

  q        [b, s_q, h_q, 576]                  absorbed queries, bf16 or fp16
  kv_cache uint8 [num_blocks, page_block_size, 1, 656]   FlashMLA's FP8 rows
  indices  int32 [b, s_q, topk]                physical rows: page * page_block_size + slot;
                                               -1 = no key (the only marker skipped)
  out      [b, s_q, h_q, 512]                  q's dtype
  lse      [b, h_q, s_q] float32               natural log; -inf where every index is -1
                                               (out 0 there; FlashMLA returns lse = +inf)

One program per (BLOCK_M heads, one query token). The heads of a query token share its
top-k rows (absorbed MLA is an MQA), so they share every loaded tile; two query tokens of one
sequence have their own index lists, so they do not share a program. The loop walks the index
list BLOCK_N entries at a time: it reads the entries, turns each valid one into a byte offset
(page * block stride + slot * row stride, the page and slot recovered from the physical index
by // and %), loads and dequantizes those rows with the dense kernels' FP8 path
(tiles._load_kv_tile), sets the scores of -1 entries to -inf, and runs the online
softmax. A -1 entry's row is never read (its load is masked); FlashMLA instead reads a row of
page 0 and discards it.

The kernel does no bounds check, as FlashMLA's does none: an index past the cache is an
illegal address on a GPU (or, worse, someone else's bytes). `check_indices` makes the host
check them -- by default only in Triton's CPU interpreter, where an out-of-range load would
crash the Python process; on a GPU the check would cost a device sync per call, so it is the
caller's (pass check_indices=True to pay for it)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import triton
import triton.language as tl

from .dims import D_K, D_LATENT, FP8_ROW_BYTES, LOG2E
from .launch import Launch, check_tile, compute_dtype, default_block_m, default_launch, interpreting
from .tiles import _D_LAT, _load_kv_tile, _load_q_block, _store_final

MAX_GRID_Y = 65535  # CUDA's limit on a grid's second axis, which holds the query tokens


@triton.jit
def _sparse_kernel(q_ptr, kv_ptr, idx_ptr, out_ptr, lse_ptr,
                   h_q, s_q, topk, page, stride_block, stride_row, stride_ib, stride_is, qk_scale_log2,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, DTYPE: tl.constexpr, KV_STAGES: tl.constexpr):
    heads = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)  # [M] head numbers
    token = tl.program_id(1)  # one query token: i_b * s_q + i_s
    i_b = token // s_q
    i_s = token % s_q
    head_ok = heads < h_q
    rows = i_s * h_q + heads  # [M] the flattened (i_s, i_h) rows of sequence i_b
    q_lat, q_rope = _load_q_block(q_ptr, i_b, rows, head_ok, s_q * h_q, DTYPE)  # [M, 512], [M, 64]
    idx_row = idx_ptr + i_b.to(tl.int64) * stride_ib + i_s.to(tl.int64) * stride_is  # this token's top-k list
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running max of the base-2 scores
    l_i = tl.zeros([BLOCK_M], tl.float32)  # running sum of exp2(score - m)
    acc = tl.zeros([BLOCK_M, _D_LAT], tl.float32)  # unnormalized output
    for start in tl.range(0, topk, BLOCK_N, num_stages=KV_STAGES):
        k = start + tl.arange(0, BLOCK_N)  # [N] positions in the top-k list
        idx = tl.load(idx_row + k, mask=k < topk, other=-1)  # [N] physical rows, -1 = none
        valid = idx != -1
        safe = tl.where(valid, idx, 0)
        kv_rows = (safe // page).to(tl.int64) * stride_block + (safe % page).to(tl.int64) * stride_row  # [N] bytes
        k_lat, k_rope = _load_kv_tile(kv_ptr, kv_rows, valid, True, DTYPE)  # [N, 512], [N, 64] dequantized
        s = tl.dot(q_lat, tl.trans(k_lat)) + tl.dot(q_rope, tl.trans(k_rope))  # [M, N] fp32
        s = tl.where(valid[None, :], s * qk_scale_log2, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))  # [M]
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # nothing valid seen yet: avoid inf - inf
        alpha = tl.exp2(m_i - m_safe)  # [M] rescale what was summed so far
        p = tl.exp2(s - m_safe[:, None])  # [M, N]; -1 entries give 0
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(DTYPE), k_lat)  # V = the first 512 dims of each row
        m_i = m_new
    _store_final(out_ptr, lse_ptr, i_b, rows, head_ok, h_q, s_q, acc, m_i, l_i)


@dataclass
class SparseCall:
    """One sparse_mla_decode_with_kvcache call, checked. gpu=True builds the configuration a
    GPU launch ships (the compile report uses it on CPU tensors)."""
    q: torch.Tensor  # [b, s_q, h_q, 576]
    kv_cache: torch.Tensor  # uint8 [num_blocks, page, 1, 656]
    indices: torch.Tensor  # int32 [b, s_q, topk]
    out: torch.Tensor  # [b, s_q, h_q, 512]
    lse: torch.Tensor  # [b, h_q, s_q] fp32
    qk_scale_log2: float
    options: dict
    gpu: bool
    b: int = field(init=False)
    s_q: int = field(init=False)
    h_q: int = field(init=False)
    topk: int = field(init=False)

    def __post_init__(self):
        self.b, self.s_q, self.h_q = self.q.shape[:3]
        self.topk = self.indices.shape[2]

    @property
    def dtype(self):
        return compute_dtype(self.q, self.gpu)

    def take(self, name, default):
        return self.options.pop(name, default)


def launches(call: SparseCall) -> list:
    """The one launch of a sparse call (the launcher of the "sparse" row of mla_decode.VERSION_TABLE)."""
    block_m = call.take("block_m", default_block_m(1, call.h_q))  # the heads of one query token
    d_bn, d_warps, d_stages = default_launch(block_m, is_fp8=True)
    d_bn = d_bn if call.gpu else 64  # interpreter: wide tiles, fewer steps
    block_n = call.take("block_n", min(d_bn, max(16, triton.next_power_of_2(call.topk))))  # no wider than top-k
    check_tile("block_m", block_m)
    check_tile("block_n", block_n)
    warps, stages = call.take("num_warps", d_warps), call.take("num_stages", d_stages)
    kv = call.kv_cache
    return [Launch(f"sparse BLOCK_M={block_m}", _sparse_kernel, (triton.cdiv(call.h_q, block_m), call.b * call.s_q),
                   dict(q_ptr=call.q, kv_ptr=kv, idx_ptr=call.indices, out_ptr=call.out, lse_ptr=call.lse,
                        h_q=call.h_q, s_q=call.s_q, topk=call.topk, page=kv.shape[1], stride_block=kv.stride(0),
                        stride_row=kv.stride(1), stride_ib=call.indices.stride(0),
                        stride_is=call.indices.stride(1), qk_scale_log2=call.qk_scale_log2),
                   dict(BLOCK_M=block_m, BLOCK_N=block_n, DTYPE=call.dtype, KV_STAGES=stages), warps, stages)]


def _check(q, kv_cache, indices, head_dim_v):
    if q.dim() != 4 or q.shape[3] != D_K:
        raise ValueError(f"q must be [b, s_q, h_q, {D_K}] (512 latent + 64 rope, absorbed query), got shape "
                         f"{tuple(q.shape)}")
    b, s_q, h_q, _ = q.shape
    if head_dim_v != D_LATENT:
        raise ValueError(f"head_dim_v must be {D_LATENT} (V = the first 512 dims of each row), got {head_dim_v}")
    if q.dtype not in (torch.bfloat16, torch.float16):
        raise TypeError(f"q must be bfloat16 or float16, got {q.dtype}")
    if not 1 <= h_q <= 128 or s_q < 1:
        raise ValueError(f"need 1 <= h_q <= 128 and s_q >= 1, got h_q={h_q}, s_q={s_q}")
    if b * s_q > MAX_GRID_Y:
        raise ValueError(f"b * s_q = {b * s_q} query tokens exceed the launch grid's second axis ({MAX_GRID_Y}): "
                         "split the batch into several calls")
    if kv_cache.dtype != torch.uint8 or kv_cache.dim() != 4 or kv_cache.shape[2] != 1 \
            or kv_cache.shape[3] != FP8_ROW_BYTES:
        raise TypeError(f"kv_cache must be FlashMLA's FP8 rows, uint8 [num_blocks, page_block_size, 1, "
                        f"{FP8_ROW_BYTES}] (sparse decode reads FP8 caches only), got {kv_cache.dtype} "
                        f"{tuple(kv_cache.shape)}")
    if not kv_cache.is_contiguous() or kv_cache.data_ptr() % 16:
        raise ValueError("kv_cache must be contiguous and start at a 16-byte aligned address (its float32 scales "
                         "and bf16 rope are read through wider pointers): pass a fresh tensor or .clone() it")
    if indices.dtype != torch.int32 or indices.dim() != 3 or tuple(indices.shape[:2]) != (b, s_q):
        raise TypeError(f"indices must be int32 [b={b}, s_q={s_q}, topk], got {indices.dtype} "
                        f"{tuple(indices.shape)}")
    if indices.shape[2] < 1:
        raise ValueError("indices must hold at least one entry per query token (topk >= 1)")
    if indices.stride(2) != 1:
        raise ValueError(f"each query token's index list must be contiguous, got strides {indices.stride()}")
    if not q.is_contiguous():
        raise ValueError(f"q must be contiguous (call .contiguous() first); got strides {q.stride()}")
    devs = {t.device for t in (q, kv_cache, indices)}
    if len(devs) != 1:
        raise ValueError(f"all inputs must be on one device, got {sorted(str(x) for x in devs)}")


def check_indices(indices, kv_cache):
    """What the kernel does not check (it would cost a device sync): every entry is -1 or a row
    of the cache, 0 .. num_blocks * page_block_size - 1. Raises ValueError naming the first bad one."""
    n_rows = kv_cache.shape[0] * kv_cache.shape[1]
    bad = (indices < -1) | (indices >= n_rows)
    if bool(bad.any()):
        where = tuple(int(x) for x in torch.nonzero(bad)[0].tolist())
        raise ValueError(f"indices{list(where)} = {int(indices[where])} is neither -1 nor a row 0..{n_rows - 1} of "
                         f"the cache: on a GPU the kernel would read outside the cache (an illegal address, or "
                         f"someone else's bytes). -1 is the only 'no key' marker in sparse decode.")


def prepare(q, kv_cache, indices, head_dim_v=D_LATENT, softmax_scale=None, gpu=None, launcher=None, **options):
    """Check the inputs and build the launch of one call, without running it. Returns
    (launches, out, lse); out and lse are allocated, not yet written. launcher: another
    version's launcher for this call (a row of VERSION_TABLE with call="sparse"; default: this
    kernel's, `launches`)."""
    _check(q, kv_cache, indices, head_dim_v)
    options.pop("batch_invariant", None)  # always: a query token's top-k rows are never split across programs
    want_check = options.pop("check_indices", None)
    if want_check or (want_check is None and interpreting()):
        check_indices(indices, kv_cache)
    scale = softmax_scale if softmax_scale is not None else D_K ** -0.5
    b, s_q, h_q = q.shape[:3]
    out = torch.empty(b, s_q, h_q, D_LATENT, dtype=q.dtype, device=q.device)
    lse = torch.empty(b, h_q, s_q, dtype=torch.float32, device=q.device)
    call = SparseCall(q, kv_cache, indices, out, lse, float(scale) * LOG2E, options,
                      (not interpreting()) if gpu is None else gpu)
    found = (launcher or launches)(call) if b else []
    if options:
        raise TypeError(f"unknown option(s) for sparse decode: {sorted(options)}")
    return found, out, lse


def sparse_mla_decode_with_kvcache(q, kv_cache, indices, head_dim_v=D_LATENT, softmax_scale=None, **options):
    """Top-k sparse MLA decode over FP8 rows (FlashMLA's flash_mla_with_kvcache with
    `indices`, block_table=None, is_fp8_kvcache=True). Returns (out, lse).

    options: check_indices (None: only in the interpreter; True/False), block_m, block_n,
    num_warps, num_stages; batch_invariant is accepted and always holds (one program reads a
    query token's whole top-k list, so its result never depends on the rest of the batch)."""
    found, out, lse = prepare(q, kv_cache, indices, head_dim_v, softmax_scale, **options)
    for launch in found:
        launch()
    return out, lse
