"""MLA prefill on the expand path, in Triton: causal attention over ragged sequences with a
192-wide QK (128 nope + 64 rope) and a 128-wide V -- FlashAttention's varlen call, the one vLLM's
MLA backends make for prefill -- in versions from straightforward to fast (chapter 9).

  q             [total_q, h, 192]   the new tokens' queries (q_nope | q_rope), bf16 or fp16
  k             [total_k, h, 192]   keys, expanded (per-head k_nope | the shared k_rope), q's dtype
  v             [total_k, h, 128]   values, expanded, q's dtype (k and v may both be float32: a workspace
                                    in Triton's interpreter; the dots still take q's dtype on a GPU)
  cu_seqlens_q  [b + 1] int32       sequence i's queries: rows cu_seqlens_q[i] .. cu_seqlens_q[i+1] - 1
  cu_seqlens_k  [b + 1] int32       its keys start at row cu_seqlens_k[i]
  seqused_k     [b] int32 or None   ... and are the next seqused_k[i] rows (FlashAttention 3's seqused_k;
                                    None: up to cu_seqlens_k[i+1]); rows after them are never read
  max_seqlen_q  int                 the longest sequence's queries (sizes the grid; a host number, no sync)
  out           [total_q, h, 128]   q's dtype (or the `out` buffer passed: float32 for partial results)
  lse           [h, total_q] float32, natural log (FlashAttention's varlen layout)

Causal masking is bottom-right aligned, as an extend needs it: a sequence with n_q queries and n_k
keys puts query j at position n_k - n_q + j, so it sees keys 0 .. n_k - n_q + j (a fresh prompt
has n_q = n_k; an extend after a cached prefix of n_k - n_q tokens is the same rule). A query that
sees no key gets out 0 and lse -inf (the log of an empty sum; mlacourse.prefill.prefill_attention
is the float64 reference). causal=False: every query sees all n_k keys (a cached prefix chunk).

The versions (version=...; every one dispatches through PREFILL_TABLE below, a sibling of
mla_decode.VERSION_TABLE in the same style -- prefill takes other arguments than decode):
  1 "prefill_tiled"   FlashAttention-2's loop, straightforwardly: one program per (BLOCK_M queries,
                      head, sequence) walks EVERY KV tile of its sequence, masks each, runs the
                      online softmax with tl.dot for QK^T (two dots: 128 nope + 64 rope dims) and
                      P V. Loads are not pipelined (num_stages 1).
  2 "prefill_causal"  the same math over the tiles a causal block needs only: tiles wholly below
                      the diagonal run without a mask, the few that cross it with one, the tiles
                      above it are never loaded (about half the work of a fresh prompt:
                      mlacourse.prefill.tile_classes draws the schedule); the loop over KV tiles is
                      software-pipelined (tl.range num_stages: the next tiles' copies in flight
                      during this tile's dots) and the query blocks run longest first, so the
                      cheap ones fill the tail.
  3 "prefill_sparse"  absorbed sparse prefill, DeepSeek-V3.2 (kernels/sparse_prefill.py): FlashMLA's
                      MQA mode -- each query token against its own top-k latent rows, 576-wide QK,
                      512-wide V -- run by chapter 8's sparse decode kernel; another call
                      (sparse_mla_prefill), so its row says call="sparse".
The expand path's chunked prefix context (the prefix expanded from the latent cache chunk by
chunk, each chunk's (out, lse) merged by log-sum-exp) is kernels/prefill_context.py; it runs
versions 1-2 for its attention.

Softmax runs in base 2 (scores times softmax_scale * log2 e, exp2), lse is stored in natural log.
What the compiler made of each version: `python -m kernels.compile_report --only prefill_causal`
(kernels/BENCHMARKS.md's prefill section); what a GPU makes of it: kernels/bench_prefill.py. The
float64 reference is mlacourse.prefill.prefill_attention, the GPU-like one kernels.reference.
reference_prefill(mode="gpu"); tests/test_kernel_prefill.py checks every version against both."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
import triton
import triton.language as tl

from . import sparse_prefill
from .dims import LOG2E
from .launch import Launch, check_tile, compute_dtype, interpreting
from .mla_decode import Version

from mlacourse.config import DEEPSEEK_V3

D_NOPE, D_ROPE, D_V = DEEPSEEK_V3.d_nope, DEEPSEEK_V3.d_rope, DEEPSEEK_V3.d_v  # 128, 64, 128
D_QK = D_NOPE + D_ROPE  # 192
MAX_GRID_YZ = 65535  # CUDA's limit on a grid's second and third axes: heads, sequences
_D_NOPE = tl.constexpr(D_NOPE)
_D_ROPE = tl.constexpr(D_ROPE)
_D_V = tl.constexpr(D_V)
_LN2 = tl.constexpr(1.0 / LOG2E)


# ---------------------------------------------------------------------------------------
# Device helpers the two versions share
# ---------------------------------------------------------------------------------------

@triton.jit
def _load_q(q_ptr, rows, row_ok, stride_qt, DTYPE: tl.constexpr):
    """q_nope [M, 128], q_rope [M, 64] of token rows `rows` of one head (q_ptr: that head's first
    number); rows without row_ok read as 0."""
    base = q_ptr + rows.to(tl.int64)[:, None] * stride_qt
    q_nope = tl.load(base + tl.arange(0, _D_NOPE)[None, :], mask=row_ok[:, None], other=0.0).to(DTYPE)
    q_rope = tl.load(base + _D_NOPE + tl.arange(0, _D_ROPE)[None, :], mask=row_ok[:, None], other=0.0).to(DTYPE)
    return q_nope, q_rope


@triton.jit
def _attend_tile(acc, m_i, l_i, q_nope, q_rope, k_ptr, v_ptr, stride_kt, stride_vt, start, n_k, limit,
                 qk_scale_log2, MASKED: tl.constexpr, BLOCK_N: tl.constexpr, DTYPE: tl.constexpr):
    """One KV tile (keys start .. start + BLOCK_N - 1 of the sequence; k_ptr, v_ptr: its key 0 of
    this head) into the online softmax of BLOCK_M queries. MASKED: key c counts for query r only
    if c < limit[r] (limit <= n_k: causal diagonal and the end of the keys), and keys past n_k are
    not loaded; unmasked (a tile every query sees whole): plain loads, no compare.
    acc [M, 128] fp32 (unnormalized), m_i [M] running max of base-2 scores, l_i [M] running sum."""
    cols = start + tl.arange(0, BLOCK_N)  # [N] key positions in the sequence
    k_rows = k_ptr + cols.to(tl.int64)[:, None] * stride_kt  # [N, 1]
    v_rows = v_ptr + cols.to(tl.int64)[:, None] * stride_vt
    if MASKED:
        col_ok = (cols < n_k)[:, None]
        k_nope = tl.load(k_rows + tl.arange(0, _D_NOPE)[None, :], mask=col_ok, other=0.0).to(DTYPE)  # [N, 128]
        k_rope = tl.load(k_rows + _D_NOPE + tl.arange(0, _D_ROPE)[None, :], mask=col_ok, other=0.0).to(DTYPE)
        v = tl.load(v_rows + tl.arange(0, _D_V)[None, :], mask=col_ok, other=0.0).to(DTYPE)  # [N, 128]
    else:
        k_nope = tl.load(k_rows + tl.arange(0, _D_NOPE)[None, :]).to(DTYPE)
        k_rope = tl.load(k_rows + _D_NOPE + tl.arange(0, _D_ROPE)[None, :]).to(DTYPE)
        v = tl.load(v_rows + tl.arange(0, _D_V)[None, :]).to(DTYPE)
    s = (tl.dot(q_nope, tl.trans(k_nope)) + tl.dot(q_rope, tl.trans(k_rope))) * qk_scale_log2  # [M, N] fp32
    if MASKED:
        s = tl.where(cols[None, :] < limit[:, None], s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=1))  # [M]
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a query that has seen nothing yet: no inf - inf
    alpha = tl.exp2(m_i - m_safe)  # [M] rescale what was summed so far
    p = tl.exp2(s - m_safe[:, None])  # [M, N]; masked entries give 0
    l_i = l_i * alpha + tl.sum(p, axis=1)
    acc = acc * alpha[:, None] + tl.dot(p.to(DTYPE), v)
    return acc, m_new, l_i


@triton.jit
def _store_rows(out_ptr, lse_ptr, rows, row_ok, stride_ot, acc, m_i, l_i):
    """out = acc / l in out's dtype, lse = (m + log2 l) * ln 2 for token rows `rows` of one head
    (out_ptr, lse_ptr: that head's); a query that saw no key: 0 and -inf."""
    seen = l_i > 0
    l_safe = tl.where(seen, l_i, 1.0)
    out = tl.where(seen[:, None], acc / l_safe[:, None], 0.0)
    lse = tl.where(seen, (m_i + tl.log2(l_safe)) * _LN2, float("-inf"))
    tl.store(out_ptr + rows.to(tl.int64)[:, None] * stride_ot + tl.arange(0, _D_V)[None, :],
             out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])
    tl.store(lse_ptr + rows, lse, mask=row_ok)


@triton.jit
def _sequence(cu_q_ptr, cu_k_ptr, used_k_ptr, seq, HAS_USED: tl.constexpr):
    """(first query row, queries, first key row, keys) of sequence `seq`."""
    q0 = tl.load(cu_q_ptr + seq)
    n_q = tl.load(cu_q_ptr + seq + 1) - q0
    k0 = tl.load(cu_k_ptr + seq)
    if HAS_USED:
        n_k = tl.load(used_k_ptr + seq)
    else:
        n_k = tl.load(cu_k_ptr + seq + 1) - k0
    return q0, n_q, k0, n_k


# ---------------------------------------------------------------------------------------
# Version 1: every KV tile, each masked, no pipelining
# ---------------------------------------------------------------------------------------

@triton.jit
def _prefill_tiled_kernel(q_ptr, k_ptr, v_ptr, cu_q_ptr, cu_k_ptr, used_k_ptr, out_ptr, lse_ptr,
                          stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh, stride_ot, stride_oh,
                          stride_lh, qk_scale_log2,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, HAS_USED: tl.constexpr,
                          DTYPE: tl.constexpr):
    """Grid (query blocks of the longest sequence, heads, sequences)."""
    m0 = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1)
    q0, n_q, k0, n_k = _sequence(cu_q_ptr, cu_k_ptr, used_k_ptr, tl.program_id(2), HAS_USED)
    if m0 < n_q:  # blocks past this sequence's queries do nothing
        rows = m0 + tl.arange(0, BLOCK_M)  # [M] query positions in the sequence
        row_ok = rows < n_q
        if CAUSAL:
            limit = tl.minimum(tl.maximum(n_k - n_q + 1 + rows, 0), n_k)  # bottom-right aligned
        else:
            limit = tl.zeros([BLOCK_M], tl.int32) + n_k
        limit = tl.where(row_ok, limit, 0)
        q_nope, q_rope = _load_q(q_ptr + head.to(tl.int64) * stride_qh, q0 + rows, row_ok, stride_qt, DTYPE)
        k_head = k_ptr + k0.to(tl.int64) * stride_kt + head.to(tl.int64) * stride_kh
        v_head = v_ptr + k0.to(tl.int64) * stride_vt + head.to(tl.int64) * stride_vh
        m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, _D_V], tl.float32)
        for start in range(0, n_k, BLOCK_N):  # every tile, masked
            acc, m_i, l_i = _attend_tile(acc, m_i, l_i, q_nope, q_rope, k_head, v_head, stride_kt, stride_vt, start,
                                         n_k, limit, qk_scale_log2, True, BLOCK_N, DTYPE)
        _store_rows(out_ptr + head.to(tl.int64) * stride_oh, lse_ptr + head.to(tl.int64) * stride_lh, q0 + rows, row_ok,
                    stride_ot, acc, m_i, l_i)


# ---------------------------------------------------------------------------------------
# Version 2: skip the tiles above the diagonal, mask only the diagonal ones, pipeline the rest
# ---------------------------------------------------------------------------------------

@triton.jit
def _prefill_causal_kernel(q_ptr, k_ptr, v_ptr, cu_q_ptr, cu_k_ptr, used_k_ptr, out_ptr, lse_ptr,
                           stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh, stride_ot, stride_oh,
                           stride_lh, qk_scale_log2,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                           HAS_USED: tl.constexpr, DTYPE: tl.constexpr, KV_STAGES: tl.constexpr):
    """Grid (query blocks of the longest sequence, heads, sequences); block 0 of the grid is the
    LAST query block (the most tiles under a causal mask), so the long programs start first."""
    m0 = (tl.num_programs(0) - 1 - tl.program_id(0)) * BLOCK_M
    head = tl.program_id(1)
    q0, n_q, k0, n_k = _sequence(cu_q_ptr, cu_k_ptr, used_k_ptr, tl.program_id(2), HAS_USED)
    if m0 < n_q:
        rows = m0 + tl.arange(0, BLOCK_M)
        row_ok = rows < n_q
        if CAUSAL:  # mlacourse.prefill.block_tile_ranges: the same two bounds
            limit = tl.minimum(tl.maximum(n_k - n_q + 1 + rows, 0), n_k)
            lo = tl.minimum(tl.maximum(n_k - n_q + 1 + m0, 0), n_k)  # keys every query of the block sees
            hi = tl.minimum(tl.maximum(n_k - n_q + tl.minimum(m0 + BLOCK_M, n_q), 0), n_k)  # keys the last one sees
        else:
            limit = tl.zeros([BLOCK_M], tl.int32) + n_k
            lo = n_k
            hi = n_k
        limit = tl.where(row_ok, limit, 0)
        full_end = (lo // BLOCK_N) * BLOCK_N  # tiles below it: seen whole by every query of the block
        q_nope, q_rope = _load_q(q_ptr + head.to(tl.int64) * stride_qh, q0 + rows, row_ok, stride_qt, DTYPE)
        k_head = k_ptr + k0.to(tl.int64) * stride_kt + head.to(tl.int64) * stride_kh
        v_head = v_ptr + k0.to(tl.int64) * stride_vt + head.to(tl.int64) * stride_vh
        m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, _D_V], tl.float32)
        for start in tl.range(0, full_end, BLOCK_N, num_stages=KV_STAGES):  # below the diagonal: no mask
            acc, m_i, l_i = _attend_tile(acc, m_i, l_i, q_nope, q_rope, k_head, v_head, stride_kt, stride_vt, start,
                                         n_k, limit, qk_scale_log2, False, BLOCK_N, DTYPE)
        for start in tl.range(full_end, hi, BLOCK_N, num_stages=KV_STAGES):  # across the diagonal; above: skipped
            acc, m_i, l_i = _attend_tile(acc, m_i, l_i, q_nope, q_rope, k_head, v_head, stride_kt, stride_vt, start,
                                         n_k, limit, qk_scale_log2, True, BLOCK_N, DTYPE)
        _store_rows(out_ptr + head.to(tl.int64) * stride_oh, lse_ptr + head.to(tl.int64) * stride_lh, q0 + rows, row_ok,
                    stride_ot, acc, m_i, l_i)


# ---------------------------------------------------------------------------------------
# Host side: one checked call, the launchers, the table of versions
# ---------------------------------------------------------------------------------------

@dataclass
class PrefillCall:
    """One mla_prefill call, checked. gpu=True builds the configuration a GPU launch ships (the
    compile report uses it on CPU tensors)."""
    q: torch.Tensor  # [total_q, h, 192]
    k: torch.Tensor  # [total_k, h, 192]
    v: torch.Tensor  # [total_k, h, 128]
    cu_seqlens_q: torch.Tensor  # [b + 1] int32
    cu_seqlens_k: torch.Tensor  # [b + 1] int32
    seqused_k: torch.Tensor | None  # [b] int32
    max_seqlen_q: int
    out: torch.Tensor  # [total_q, h, 128]
    lse: torch.Tensor  # [h, total_q] fp32
    causal: bool
    qk_scale_log2: float
    options: dict
    gpu: bool
    b: int = field(init=False)
    h: int = field(init=False)

    def __post_init__(self):
        self.b = self.cu_seqlens_q.shape[0] - 1
        self.h = self.q.shape[1]

    @property
    def dtype(self):
        return compute_dtype(self.q, self.gpu)

    def take(self, name, default):
        return self.options.pop(name, default)

    def args(self) -> dict:
        used = self.seqused_k if self.seqused_k is not None else self.cu_seqlens_k  # never read without HAS_USED
        return dict(q_ptr=self.q, k_ptr=self.k, v_ptr=self.v, cu_q_ptr=self.cu_seqlens_q, cu_k_ptr=self.cu_seqlens_k,
                    used_k_ptr=used, out_ptr=self.out, lse_ptr=self.lse,
                    stride_qt=self.q.stride(0), stride_qh=self.q.stride(1), stride_kt=self.k.stride(0),
                    stride_kh=self.k.stride(1), stride_vt=self.v.stride(0), stride_vh=self.v.stride(1),
                    stride_ot=self.out.stride(0), stride_oh=self.out.stride(1), stride_lh=self.lse.stride(0),
                    qk_scale_log2=self.qk_scale_log2)

    def constexprs(self) -> dict:
        return dict(CAUSAL=bool(self.causal), HAS_USED=self.seqused_k is not None, DTYPE=self.dtype)


def _tiles(call: PrefillCall, gpu_default: tuple, interpreter_default=(32, 32)):
    """BLOCK_M, BLOCK_N, num_warps, num_stages: the GPU's (gpu_default) or, in the interpreter,
    32 x 32 tiles (a tile boundary a test can reach with short sequences); options override."""
    bm, bn, warps, stages = gpu_default if call.gpu else (*interpreter_default, 4, 1)
    block_m, block_n = call.take("block_m", bm), call.take("block_n", bn)
    check_tile("block_m", block_m)
    check_tile("block_n", block_n)
    return block_m, block_n, call.take("num_warps", warps), call.take("num_stages", stages)


# What a GPU launch ships, chosen from sm_90 compiles (python -m kernels.compile_report --only NAME),
# not from timings: no GPU run has tuned them. Version 2: 128 query rows over 8 warps (the
# fp32 accumulator [128, 128] is 64 registers a thread), 64-key tiles, three stages of K and
# V copies in shared memory (3 x 40 KB) beside Q (48 KB).
TILED_LAUNCH = (64, 64, 4, 1)  # BLOCK_M, BLOCK_N, num_warps, num_stages
CAUSAL_LAUNCH = (128, 64, 8, 3)


def _launch_tiled(call: PrefillCall):
    block_m, block_n, warps, stages = _tiles(call, TILED_LAUNCH)
    grid = (triton.cdiv(max(call.max_seqlen_q, 1), block_m), call.h, call.b)
    return [Launch(f"prefill_tiled BLOCK_M={block_m}", _prefill_tiled_kernel, grid, call.args(),
                   dict(call.constexprs(), BLOCK_M=block_m, BLOCK_N=block_n), warps, stages)]


def _launch_causal(call: PrefillCall):
    block_m, block_n, warps, stages = _tiles(call, CAUSAL_LAUNCH)
    grid = (triton.cdiv(max(call.max_seqlen_q, 1), block_m), call.h, call.b)
    return [Launch(f"prefill_causal BLOCK_M={block_m}", _prefill_causal_kernel, grid, call.args(),
                   dict(call.constexprs(), BLOCK_M=block_m, BLOCK_N=block_n, KV_STAGES=stages), warps, stages)]


@dataclass(frozen=True)
class PrefillVersion:
    """One row of the prefill table, in mla_decode.Version's style (its status, its dots' type and
    where it runs are worked out by the same code). Everything outside the launcher -- the
    checks, the tests, the compile report, the benchmark, tests/kernel_checklist.py -- reads these
    fields, never the version's name."""
    number: int
    name: str
    launch: Callable[[object], list]  # a checked call -> its launches (a PrefillCall; a SparsePrefillCall)
    summary: str
    call: str = "expand"  # "expand": q/k/v 192/192/128 + cu_seqlens (mla_prefill); "sparse": absorbed
    #                       top-k over latent rows (sparse_prefill.sparse_mla_prefill)
    caches: tuple = ("bf16",)  # rows it reads: "bf16" = K/V (or latent rows) in q's dtype, "fp8" = 656-byte rows
    dtypes: tuple = ("bfloat16", "float16")  # q's dtypes
    block_m: tuple = (64,)  # query rows (expand) or heads (sparse) per program a GPU launch ships
    causal_tiles: str | None = "all"  # expand: "all" = loads every KV tile and masks it, "skip" = never
    #                                   loads a tile above the diagonal, masks only the diagonal ones
    pipelined: bool = False  # its KV loop is software-pipelined (num_stages > 1 on a GPU)
    batch_invariant: bool = True  # accepts batch_invariant=True (no sequence's keys split across programs)
    interpreter: bool = True  # runs in Triton's CPU interpreter (else: a GPU only)
    hopper_only: bool = False
    gpu_verified: bool = False  # its out and lse checked against float64 on a GPU (a GPU run sets it)
    dot_operands: str = "q"  # its dots' operand type on a GPU (see mla_decode.Version): "q" = q's dtype

    status = Version.status
    gpu_operands = Version.gpu_operands
    runs_on = Version.runs_on


# One table of prefill versions: a new one is a launcher and a row (CONTRIBUTING.md, "A new kernel version").
PREFILL_TABLE = {v.name: v for v in [
    PrefillVersion(1, "prefill_tiled", _launch_tiled, "every KV tile of the sequence, each masked; no pipelining",
                   block_m=(TILED_LAUNCH[0],), causal_tiles="all", pipelined=False),
    PrefillVersion(2, "prefill_causal", _launch_causal, "tiles above the diagonal skipped, only the diagonal ones "
                   "masked, KV loads pipelined, longest query blocks first", block_m=(CAUSAL_LAUNCH[0],),
                   causal_tiles="skip", pipelined=True),
    PrefillVersion(3, "prefill_sparse", sparse_prefill.launches, "absorbed top-k prefill (FlashMLA's MQA mode) on "
                   "chapter 8's sparse kernel: bf16 or FP8 rows", call="sparse", caches=("bf16", "fp8"),
                   block_m=(16, 32, 64), causal_tiles=None, pipelined=True),
]}
EXPAND_VERSIONS = tuple(n for n, v in PREFILL_TABLE.items() if v.call == "expand")
DEFAULT_VERSION = "prefill_causal"


def _check(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k, max_seqlen_q, out, lse):
    if q.dim() != 3 or q.shape[2] != D_QK:
        raise ValueError(f"q must be [total_q, h, {D_QK}] ({D_NOPE} nope + {D_ROPE} rope), got shape {tuple(q.shape)}")
    h = q.shape[1]
    if k.dim() != 3 or k.shape[1:] != (h, D_QK):
        raise ValueError(f"k must be [total_k, h={h}, {D_QK}], got shape {tuple(k.shape)}")
    if v.dim() != 3 or tuple(v.shape) != (k.shape[0], h, D_V):
        raise ValueError(f"v must be [total_k={k.shape[0]}, h={h}, {D_V}], got shape {tuple(v.shape)}")
    if q.dtype not in (torch.bfloat16, torch.float16):
        raise TypeError(f"q must be bfloat16 or float16, got {q.dtype}")
    if k.dtype not in (q.dtype, torch.float32) or v.dtype != k.dtype:
        raise TypeError(f"k and v must have q's dtype {q.dtype} (or both float32: a float32 workspace), got {k.dtype} "
                        f"and {v.dtype}")
    if not 1 <= h <= MAX_GRID_YZ:
        raise ValueError(f"h must be in 1..{MAX_GRID_YZ}, got {h}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.numel() and t.stride(2) != 1:
            raise ValueError(f"{name}'s last dimension must be contiguous, got strides {t.stride()}")
    for name, t in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if t.dtype != torch.int32 or t.dim() != 1 or t.shape[0] < 1 or not t.is_contiguous():
            raise TypeError(f"{name} must be a contiguous int32 [b + 1], got {t.dtype} {tuple(t.shape)}")
    b = cu_seqlens_q.shape[0] - 1
    if cu_seqlens_k.shape[0] != b + 1:
        raise ValueError(f"cu_seqlens_q names {b} sequences, cu_seqlens_k {cu_seqlens_k.shape[0] - 1}")
    if b > MAX_GRID_YZ:
        raise ValueError(f"{b} sequences exceed the launch grid's third axis ({MAX_GRID_YZ}): split the batch")
    if seqused_k is not None and (seqused_k.dtype != torch.int32 or tuple(seqused_k.shape) != (b,)
                                  or not seqused_k.is_contiguous()):
        raise TypeError(f"seqused_k must be a contiguous int32 [b={b}], got {seqused_k.dtype} {tuple(seqused_k.shape)}")
    if not isinstance(max_seqlen_q, int) or isinstance(max_seqlen_q, bool) or max_seqlen_q < 0:
        raise TypeError(f"max_seqlen_q must be an int >= 0 (a host number: the grid's size), got {max_seqlen_q!r}")
    if out is not None and (out.dim() != 3 or tuple(out.shape) != (q.shape[0], h, D_V) or out.stride(2) != 1
                            or out.dtype not in (q.dtype, torch.float32)):
        raise ValueError(f"out must be [total_q={q.shape[0]}, h={h}, {D_V}] in {q.dtype} or float32 with a contiguous "
                         f"last dimension, got {out.dtype} {tuple(out.shape)}")
    if lse is not None and (lse.dtype != torch.float32 or tuple(lse.shape) != (h, q.shape[0]) or lse.stride(1) != 1):
        raise ValueError(f"lse must be float32 [h={h}, total_q={q.shape[0]}] with contiguous rows, got "
                         f"{lse.dtype} {tuple(lse.shape)}")
    devs = {t.device for t in (q, k, v, cu_seqlens_q, cu_seqlens_k) + ((seqused_k,) if seqused_k is not None else ())}
    if len(devs) != 1:
        raise ValueError(f"all inputs must be on one device, got {sorted(str(x) for x in devs)}")


def check_lengths(q, k, cu_seqlens_q, cu_seqlens_k, seqused_k, max_seqlen_q) -> None:
    """What the kernels do not check (it would cost a device sync): cu_seqlens start at 0, never
    decrease and stay within q's and k's rows; seqused_k fits its sequence's rows; max_seqlen_q is
    at least the longest sequence's queries (a smaller one would leave queries unwritten).
    Raises ValueError naming the first problem."""
    cq, ck = cu_seqlens_q.cpu().long(), cu_seqlens_k.cpu().long()
    for name, cu, rows in (("cu_seqlens_q", cq, q.shape[0]), ("cu_seqlens_k", ck, k.shape[0])):
        if int(cu[0]) != 0 or bool((cu[1:] < cu[:-1]).any()) or int(cu[-1]) > rows:
            raise ValueError(f"{name} must start at 0, never decrease and end at most at {rows} rows, got {cu.tolist()}")
    if seqused_k is not None:
        used = seqused_k.cpu().long()
        room = ck[1:] - ck[:-1]
        if bool(((used < 0) | (used > room)).any()):
            raise ValueError(f"seqused_k must lie in 0..cu_seqlens_k[i+1] - cu_seqlens_k[i] = {room.tolist()}, "
                             f"got {used.tolist()}")
    longest = int((cq[1:] - cq[:-1]).max()) if cq.numel() > 1 else 0
    if longest > max_seqlen_q:
        raise ValueError(f"max_seqlen_q={max_seqlen_q}, but a sequence has {longest} queries: its last queries "
                         f"would never be computed")


def prepare(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, softmax_scale=None, causal=True, seqused_k=None,
            out=None, lse=None, gpu=None, **options):
    """Check the inputs and build the launches of one call without running them.
    Returns (version, launches, out, lse)."""
    name = options.pop("version", DEFAULT_VERSION)
    if name not in PREFILL_TABLE:
        raise ValueError(f"version must be one of {EXPAND_VERSIONS}, got {name!r}")
    version = PREFILL_TABLE[name]
    if version.call != "expand":
        raise ValueError(f"version {name!r} is the absorbed sparse prefill: call kernels.sparse_prefill."
                         f"sparse_mla_prefill")
    _check(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k, max_seqlen_q, out, lse)
    if str(q.dtype).removeprefix("torch.") not in version.dtypes:
        raise TypeError(f"version {name!r} needs {' or '.join(version.dtypes)} q, got {q.dtype}")
    batch_invariant = bool(options.pop("batch_invariant", False))
    if batch_invariant and not version.batch_invariant:
        raise ValueError(f"version {name!r} does not take batch_invariant=True")
    want_check = options.pop("check_lengths", None)
    if want_check or (want_check is None and interpreting()):
        check_lengths(q, k, cu_seqlens_q, cu_seqlens_k, seqused_k, max_seqlen_q)
    scale = softmax_scale if softmax_scale is not None else D_QK ** -0.5
    total_q, h = q.shape[:2]
    out = out if out is not None else torch.empty(total_q, h, D_V, dtype=q.dtype, device=q.device)
    lse = lse if lse is not None else torch.empty(h, total_q, dtype=torch.float32, device=q.device)
    call = PrefillCall(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k, max_seqlen_q, out, lse, bool(causal),
                       float(scale) * LOG2E, options, (not interpreting()) if gpu is None else gpu)
    launches = version.launch(call) if call.b and max_seqlen_q and total_q else []
    if options:
        raise TypeError(f"unknown option(s) for version {name!r}: {sorted(options)}")
    return version, launches, out, lse


def mla_prefill(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, softmax_scale=None, causal=True, seqused_k=None,
                out=None, lse=None, **options):
    """The expand path's attention over ragged sequences (module docstring). Returns (out, lse):
    out [total_q, h, 128] in q's dtype (or the `out` given, q's dtype or float32), lse [h, total_q]
    float32, natural log, -inf for a query that sees no key (out 0 there).
    options:
      version        "prefill_tiled" | "prefill_causal" (default): PREFILL_TABLE's rows with call="expand"
      batch_invariant  accepted (no version splits a sequence's keys: a sequence's result never depends on the batch)
      check_lengths  None: only in the interpreter; True/False (check_lengths: costs a device sync)
      block_m, block_n, num_warps, num_stages   tile shape and launch overrides
    Not checked on a GPU unless check_lengths=True: the values of cu_seqlens, seqused_k and max_seqlen_q."""
    version, launches, out, lse = prepare(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, softmax_scale, causal,
                                          seqused_k, out, lse, **options)
    if launches and not version.runs_on(q.device):
        raise RuntimeError(f"version {version.name!r} cannot run on {q.device} here: it needs a CUDA GPU or Triton's "
                           f"interpreter (TRITON_INTERPRET=1)")
    for launch in launches:
        launch()
    return out, lse


def dot_widths(launch) -> tuple | None:
    """(QK width, PV width) of a prefill attention kernel's dots -- (192, 128) -- for the compile
    report's useful MMA FLOP per tile, 2 * BLOCK_M * BLOCK_N * (192 + 128); None for any other
    kernel (the report's own (576, 512) then holds)."""
    return (D_QK, D_V) if launch.kernel in (_prefill_tiled_kernel, _prefill_causal_kernel) else None
