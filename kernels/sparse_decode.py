"""Sparse MLA decode (DeepSeek Sparse Attention, DeepSeek-V3.2) in Triton, in FlashMLA's
sparse calling convention: `indices` instead of a block table.

  q        [b, s_q, h_q, 576]                  absorbed queries, bf16 or fp16
  kv_cache uint8 [num_blocks, page_block_size, 1, 656]   FlashMLA's V3.2 FP8 rows (either
                                               scale rule of mlacourse.fp8: the kernel reads
                                               float32 scales; FlashMLA packs powers of two)
  indices  int32 [b, s_q, topk]                physical rows: page * page_block_size + slot;
                                               -1 = no key (the only marker skipped)
  out      [b, s_q, h_q, 512]                  q's dtype
  lse      [b, h_q, s_q] float32               natural log; -inf where every index is -1
                                               (out 0 there)

One program per (BLOCK_M heads, one query token, one piece of its top-k list). The heads of a
query token share its top-k rows (absorbed MLA is an MQA), so they share every loaded tile; two
query tokens of one sequence have their own index lists, so they do not share a program. The
loop walks the index list BLOCK_N entries at a time: it reads the entries, turns each valid one
into a byte offset (page * block stride + slot * row stride, the page and slot recovered from
the physical index by // and %), loads and dequantizes those rows with the dense kernels' FP8
path (tiles._load_kv_tile), sets the scores of -1 entries to -inf, and runs the online
softmax. A -1 entry's row is never read (its load is masked); FlashMLA instead reads a row of
page 0 and discards it.

**Small batches.** With h_q = 128 the heads take two programs per query token, so b * s_q
below 66 leaves SMs of a 132-SM GPU idle. Then each top-k list is cut into `num_splits`
pieces of whole tiles (default_topk_splits: enough to give every SM a program, at least one
tile per piece), each piece writes a partial result with its log-sum-exp, and the dense
versions' combine kernel (tiles._combine_kernel) merges them -- split-KV over the list instead
of over the sequence. batch_invariant=True turns the split off (the split count follows the
batch size, so a token's last bits would too). Both head programs of a token dequantize the
same rows: BLOCK_M = 64 is the widest tile the registers allow (kernels/BENCHMARKS.md).

**A token with no valid index** gets out 0 and lse = -inf, as every version here does. FlashMLA
returns lse = +inf there (its kernel writes INFINITY when the row sum is 0; its reference sets
lse[lonely] = +inf). We keep -inf because lse is a log-sum-exp and that sum is empty: log 0 =
-inf, the value every merge by lse expects -- combining pieces (our split, FlashMLA's own
extra_k_cache) weights each by exp(lse_i - lse), which is 0 for -inf, while a +inf piece would
make the merged lse +inf and every weight NaN. FlashMLA's +inf suits a caller that recomputes
P = exp(s - lse) from it (a backward pass: exp(s - inf) = 0 for any finite s). Convert with
torch.where(lse == -inf, inf, lse) where FlashMLA's convention is wanted.

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
from .launch import Launch, check_tile, combine_launch, compute_dtype, default_block_m, default_launch, \
    interpreting, uniform_combine_table
from .plan import sm_count
from .tiles import _D_LAT, _load_kv_tile, _load_q_block, _store_final, _store_partial

MAX_GRID_Y = 65535  # CUDA's limit on a grid's second and third axes: query tokens, pieces of a list


@triton.jit
def _sparse_kernel(q_ptr, kv_ptr, idx_ptr, out_ptr, lse_ptr, o_part_ptr, lse_part_ptr,
                   h_q, s_q, topk, page, stride_block, stride_row, stride_ib, stride_is, qk_scale_log2,
                   num_splits, entries_per_split, n_rows,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, DTYPE: tl.constexpr, KV_STAGES: tl.constexpr,
                   IS_FP8: tl.constexpr, ROW_LIMIT: tl.constexpr):
    """Grid (head blocks, b * s_q query tokens, num_splits pieces of each top-k list). With one
    piece the program writes out and lse; with more, piece i_split covers list entries
    [i_split * entries_per_split, +entries_per_split) and writes a partial result (slot
    i_b * num_splits + i_split of o_part [slots, s_q*h_q, 512] fp32 and lse_part [slots,
    s_q*h_q] base 2) for tiles._combine_kernel to merge. IS_FP8: 656-byte FP8 rows (decode), else
    576 values in q's dtype (the sparse prefill's bf16 rows); ROW_LIMIT: an entry outside 0 .. n_rows - 1
    is "no key" (FlashMLA's sparse prefill rule), else only -1 is (its sparse decode rule)."""
    heads = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)  # [M] head numbers
    token = tl.program_id(1)  # one query token: i_b * s_q + i_s
    i_split = tl.program_id(2)
    i_b = token // s_q
    i_s = token % s_q
    head_ok = heads < h_q
    rows = i_s * h_q + heads  # [M] the flattened (i_s, i_h) rows of sequence i_b
    q_lat, q_rope = _load_q_block(q_ptr, i_b, rows, head_ok, s_q * h_q, DTYPE)  # [M, 512], [M, 64]
    idx_row = idx_ptr + i_b.to(tl.int64) * stride_ib + i_s.to(tl.int64) * stride_is  # this token's top-k list
    lo = i_split * entries_per_split  # a multiple of BLOCK_N; late pieces may be empty
    hi = tl.minimum(lo + entries_per_split, topk)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running max of the base-2 scores
    l_i = tl.zeros([BLOCK_M], tl.float32)  # running sum of exp2(score - m)
    acc = tl.zeros([BLOCK_M, _D_LAT], tl.float32)  # unnormalized output
    for start in tl.range(lo, hi, BLOCK_N, num_stages=KV_STAGES):
        k = start + tl.arange(0, BLOCK_N)  # [N] positions in the top-k list
        idx = tl.load(idx_row + k, mask=k < hi, other=-1)  # [N] physical rows, -1 = none
        if ROW_LIMIT:  # sparse prefill: any entry outside 0 .. n_rows - 1 is "no key"
            valid = (idx >= 0) & (idx < n_rows)
        else:  # sparse decode: -1 only (the host checks the rest in the interpreter)
            valid = idx != -1
        safe = tl.where(valid, idx, 0)
        kv_rows = (safe // page).to(tl.int64) * stride_block + (safe % page).to(tl.int64) * stride_row  # [N] bytes
        k_lat, k_rope = _load_kv_tile(kv_ptr, kv_rows, valid, IS_FP8, DTYPE)  # [N, 512], [N, 64] (dequantized)
        s = tl.dot(q_lat, tl.trans(k_lat)) + tl.dot(q_rope, tl.trans(k_rope))  # [M, N] fp32
        s = tl.where(valid[None, :], s * qk_scale_log2, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))  # [M]
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # nothing valid seen yet: avoid inf - inf
        alpha = tl.exp2(m_i - m_safe)  # [M] rescale what was summed so far
        p = tl.exp2(s - m_safe[:, None])  # [M, N]; -1 entries give 0
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(DTYPE), k_lat)  # V = the first 512 dims of each row
        m_i = m_new
    if num_splits == 1:
        _store_final(out_ptr, lse_ptr, i_b, rows, head_ok, h_q, s_q, acc, m_i, l_i)
    else:
        _store_partial(o_part_ptr, lse_part_ptr, i_b * num_splits + i_split, rows, head_ok, s_q * h_q, acc, m_i,
                       l_i)


def default_topk_splits(b: int, s_q: int, h_q: int, topk: int, num_sms: int, block_m: int, block_n: int) -> int:
    """Pieces to cut each query token's top-k list into: 1 when the batch alone gives every SM
    a program (head blocks * b * s_q >= num_sms); otherwise enough pieces for that,
    ceil(num_sms / programs), but never a piece shorter than one tile of block_n entries.
    Examples on 132 SMs, BLOCK_M 64 and BLOCK_N 32 (the GPU's FP8 tile), top-k 2048: h_q 128,
    b*s_q 1 -> 64 pieces (128 programs; 64 is the most 2048 entries allow); b*s_q 2 -> 33 (132
    programs); b*s_q 66 or more -> 1. Each piece costs a partial result (BLOCK_M x 512 fp32
    written, then read by the combine) and its own q load: the price of filling the SMs."""
    programs = -(-h_q // block_m) * b * s_q
    if programs >= num_sms:
        return 1
    return max(1, min(-(-num_sms // programs), -(-topk // block_n)))


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
    batch_invariant: bool = False  # read each top-k list in one program: a token's result independent of the batch
    is_fp8: bool = True  # 656-byte FP8 rows (decode); False: rows of 576 values in q's dtype (sparse prefill)
    row_limit: bool = False  # an index outside the cache's rows means "no key" (sparse prefill), else only -1 does
    name: str = "sparse"  # the launches' label: the compile report names configurations by it
    b: int = field(init=False)
    s_q: int = field(init=False)
    h_q: int = field(init=False)
    topk: int = field(init=False)

    def __post_init__(self):
        self.b, self.s_q, self.h_q = self.q.shape[:3]
        self.topk = self.indices.shape[2]

    @property
    def n_rows(self):
        return self.s_q * self.h_q

    @property
    def dtype(self):
        return compute_dtype(self.q, self.gpu)

    def take(self, name, default):
        return self.options.pop(name, default)


def launches(call: SparseCall) -> list:
    """The launches of a sparse call (the launcher of the "sparse" row of mla_decode.VERSION_TABLE):
    the kernel, and the combine when it cuts the top-k lists into pieces (num_splits > 1)."""
    block_m = call.take("block_m", default_block_m(1, call.h_q))  # the heads of one query token
    d_bn, d_warps, d_stages = default_launch(block_m, is_fp8=call.is_fp8)
    d_bn = d_bn if call.gpu else 64  # interpreter: wide tiles, fewer steps
    block_n = call.take("block_n", min(d_bn, max(16, triton.next_power_of_2(call.topk))))  # no wider than top-k
    check_tile("block_m", block_m)
    check_tile("block_n", block_n)
    warps, stages = call.take("num_warps", d_warps), call.take("num_stages", d_stages)
    num_splits = call.take("num_splits", None)
    num_sms = call.take("num_sms", None)
    if call.batch_invariant:
        if num_splits not in (None, 1):
            raise ValueError(f"batch_invariant=True reads each top-k list in one program; got num_splits={num_splits} "
                             f"(the default split count follows the batch size, so a token's result would too)")
        num_splits = 1
    if num_splits is None:
        num_splits = default_topk_splits(call.b, call.s_q, call.h_q, call.topk,
                                         num_sms or sm_count(call.q.device), block_m, block_n)
    elif num_sms is not None:
        raise TypeError("pass either num_splits= or num_sms=, not both (num_sms only chooses the split count)")
    if not isinstance(num_splits, int) or num_splits < 1:
        raise ValueError(f"num_splits must be an integer >= 1, got {num_splits!r}")
    if num_splits > MAX_GRID_Y:
        raise ValueError(f"num_splits={num_splits} exceeds the launch grid's third axis ({MAX_GRID_Y})")
    tiles = -(-call.topk // block_n)
    per_split = -(-tiles // num_splits) * block_n  # whole tiles per piece
    kv, dev = call.kv_cache, call.q.device
    if num_splits > 1:
        o_part = torch.empty(call.b * num_splits, call.n_rows, D_LATENT, dtype=torch.float32, device=dev)
        lse_part = torch.empty(call.b * num_splits, call.n_rows, dtype=torch.float32, device=dev)
    else:  # never written: the kernel stores out and lse itself
        o_part = lse_part = call.lse
    main = Launch(f"{call.name} BLOCK_M={block_m}", _sparse_kernel,
                  (triton.cdiv(call.h_q, block_m), call.b * call.s_q, num_splits),
                  dict(q_ptr=call.q, kv_ptr=kv, idx_ptr=call.indices, out_ptr=call.out, lse_ptr=call.lse,
                       o_part_ptr=o_part, lse_part_ptr=lse_part, h_q=call.h_q, s_q=call.s_q, topk=call.topk,
                       page=kv.shape[1], stride_block=kv.stride(0), stride_row=kv.stride(1),
                       stride_ib=call.indices.stride(0), stride_is=call.indices.stride(1),
                       qk_scale_log2=call.qk_scale_log2, num_splits=num_splits, entries_per_split=per_split,
                       n_rows=kv.shape[0] * kv.shape[1]),
                  dict(BLOCK_M=block_m, BLOCK_N=block_n, DTYPE=call.dtype, KV_STAGES=stages, IS_FP8=call.is_fp8,
                       ROW_LIMIT=call.row_limit), warps, stages)
    if num_splits == 1:
        return [main]
    return [main, combine_launch(call, o_part, lse_part, uniform_combine_table(call.b, num_splits, dev), num_splits)]


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
    batch_invariant = bool(options.pop("batch_invariant", False))  # True: no split of a top-k list
    want_check = options.pop("check_indices", None)
    if want_check or (want_check is None and interpreting()):
        check_indices(indices, kv_cache)
    scale = softmax_scale if softmax_scale is not None else D_K ** -0.5
    b, s_q, h_q = q.shape[:3]
    out = torch.empty(b, s_q, h_q, D_LATENT, dtype=q.dtype, device=q.device)
    lse = torch.empty(b, h_q, s_q, dtype=torch.float32, device=q.device)
    call = SparseCall(q, kv_cache, indices, out, lse, float(scale) * LOG2E, options,
                      (not interpreting()) if gpu is None else gpu, batch_invariant)
    found = (launcher or launches)(call) if b else []
    if options:
        raise TypeError(f"unknown option(s) for sparse decode: {sorted(options)}")
    return found, out, lse


def sparse_mla_decode_with_kvcache(q, kv_cache, indices, head_dim_v=D_LATENT, softmax_scale=None, **options):
    """Top-k sparse MLA decode over FP8 rows (FlashMLA's flash_mla_with_kvcache with
    `indices`, block_table=None, is_fp8_kvcache=True). Returns (out, lse).

    out [b, s_q, h_q, 512] in q's dtype; lse [b, h_q, s_q] float32, natural log, -inf for a
    token whose indices are all -1 (FlashMLA: +inf; the module docstring says why).
    options:
      num_splits   pieces per top-k list (default: default_topk_splits, 1 once the batch fills the SMs)
      num_sms      SMs to fill when choosing num_splits (default: the device's)
      batch_invariant  True: one program per top-k list (no split), so a token's out and lse are
                   bitwise the same whatever else is in the batch
      check_indices  None: only in the interpreter; True/False
      block_m, block_n, num_warps, num_stages   tile shape and launch overrides"""
    found, out, lse = prepare(q, kv_cache, indices, head_dim_v, softmax_scale, **options)
    for launch in found:
        launch()
    return out, lse
