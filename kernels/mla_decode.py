"""MLA decode over a paged latent cache, in Triton: versions from naive to fast.

After weight absorption, MLA decode is multi-query attention with one shared KV head
of width 576 (512 latent + 64 rope) whose first 512 dims double as V:

  q             [b, s_q, h_q, 576]   absorbed queries, bf16 or fp16
  kv_cache      [num_blocks, page_block_size, 1, 576]   (or uint8 [..., 656] for FP8)
  block_table   [b, max_blocks] int32
  cache_seqlens [b] int32
  out           [b, s_q, h_q, 512]   q's dtype
  lse           [b, h_q, s_q] float32, natural log

Rows that see no key (a zero-length sequence, or a causal row before the first key)
return out = 0 and lse = -inf, the value log(0) of an empty sum; FlashMLA returns +inf
there. Both mean "no key": a caller merging partial results by lse must treat either as
"weight 0" (with -inf, exp(lse - m) is already 0).

The versions (choose with version=...; all dispatch through VERSION_TABLE below):
  1 "naive"    one program per query row (one head of one query token); loops over the
               keys with vector FMAs. Every head re-reads the whole cache: h_q*s_q passes.
  2 "tiled"    one program per block of BLOCK_M query rows (heads x query tokens share
               the single KV head -- the MQA insight); QK and PV are tensor-core dots on a
               [BLOCK_M, BLOCK_N] tile; the cache is read once per row block.
  3 "splitkv"  tiled, plus the key range of each sequence cut into num_splits pieces that
               run in parallel (flash-decoding); a second kernel merges the partial
               results with their log-sum-exps. One split count for every sequence.
  4 "planned"  persistent programs over a plan (kernels.plan.mla_decode_plan, FlashMLA's
               get_mla_metadata): each program takes an equal share of (sequence, KV block)
               work that may span sequences; only sequences cut by a share boundary are
               merged. The default.
  5 "gluon"    Hopper-only, in Gluon (kernels/gluon_decode.py): TMA page tiles in an
               mbarrier pipeline, two warpgroups splitting QK^T by keys and PV by output
               columns. Compiled for sm_90, not yet run on a GPU.
  6 "seesaw"   Hopper-only, in Gluon (kernels/seesaw_decode.py): FlashMLA's seesaw -- two
               warp-specialized warpgroups holding O_L and O_R, two KV tiles per step, one
               shared running max (chapter 8). Compiled for sm_90, not yet run on a GPU.
  7 "sparse"   DeepSeek-V3.2's sparse decode (kernels/sparse_decode.py, chapter 8): top-k
               `indices` instead of a block table -- another calling convention
               (sparse_mla_decode_with_kvcache), so its row says call="sparse". FP8 rows only.
Prefill (chapter 9: the expand path's MHA, the chunked prefix, the absorbed sparse prefill on
version 7's kernel) takes other arguments: its versions are rows of a sibling table in the same
style, kernels/mla_prefill.py's PREFILL_TABLE.
What each version reads and takes (cache formats, dtypes, pages, a plan, where it runs) is
its row of VERSION_TABLE; prepare() checks a call against it, and the tests, the compile
report, the benchmark and gpu_check.sh read the rows, never the names.
batch_invariant=True (any version) splits no sequence's keys across programs: a sequence's
out and lse are then bitwise the same whatever else is in the batch.
In every version the row blocks of one sequence are adjacent in launch order (grid axis 0),
so they run at the same time and read each KV tile from HBM once (the second from L2).
Versions 1-4 read bf16/fp16 caches and FlashMLA's FP8 rows (is_fp8_kvcache=True):
_load_kv_tile dequantizes a tile in registers. The device helpers the Triton versions share
are kernels/tiles.py; a call and a launch are kernels/launch.py.

Softmax runs in base 2: scores are multiplied by softmax_scale*log2(e) once, exp2
replaces exp, and lse is converted back to natural log when it is stored."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import triton
import triton.language as tl

from . import sparse_decode
from .dims import D_K, D_LATENT, FP8_ROW_BYTES, LOG2E, check_page_block_size
from .launch import Call, Launch, check_tile, combine_launch, default_block_m, default_launch, interpreting, \
    uniform_combine_table
from .plan import COMBINE_SLOTS, DecodePlan, mla_decode_plan, sm_count
from .tiles import (_D_K, _D_LAT, _D_ROPE, _LN2, _attend_range, _combine_entry, _combine_kernel,  # noqa: F401
                    _load_kv_tile, _load_q_block, _row_limits, _segment, _store_final, _store_partial, _tile_rows)

# ---------------------------------------------------------------------------------------
# Version 1: naive -- one query row per program, vector FMAs, no tensor cores
# ---------------------------------------------------------------------------------------

@triton.jit
def _naive_kernel(q_ptr, kv_ptr, bt_ptr, seqlens_ptr, out_ptr, lse_ptr,
                  h_q, s_q, stride_bt, stride_row, qk_scale_log2,
                  BLOCK_N: tl.constexpr, PAGE: tl.constexpr, CAUSAL: tl.constexpr, IS_FP8: tl.constexpr):
    row = tl.program_id(0)  # row = i_s * h_q + i_h of the flattened [s_q * h_q] query rows
    i_b = tl.program_id(1)  # rows of one sequence are adjacent in launch order: they share its KV in L2
    n_rows = s_q * h_q
    seqlen = tl.load(seqlens_ptr + i_b)
    hi = seqlen
    if CAUSAL:
        hi = tl.minimum(seqlen - s_q + 1 + row // h_q, seqlen)  # bottom-right aligned
    q_row = q_ptr + (i_b * n_rows + row).to(tl.int64) * _D_K
    q_lat = tl.load(q_row + tl.arange(0, _D_LAT)).to(tl.float32)  # [512]
    q_rope = tl.load(q_row + _D_LAT + tl.arange(0, _D_ROPE)).to(tl.float32)  # [64]
    bt_row_ptr = bt_ptr + i_b.to(tl.int64) * stride_bt
    m_i = float("-inf")
    l_i = 0.0
    acc = tl.zeros([_D_LAT], tl.float32)
    for start in range(0, hi, BLOCK_N):
        tok = start + tl.arange(0, BLOCK_N)
        tok_ok = tok < hi
        kv_rows = _tile_rows(bt_row_ptr, start, tok, tok_ok, stride_row, PAGE, BLOCK_N)  # [N] this tile's rows
        k_lat, k_rope = _load_kv_tile(kv_ptr, kv_rows, tok_ok, IS_FP8, tl.float32)
        s = tl.sum(k_lat * q_lat[None, :], axis=1) + tl.sum(k_rope * q_rope[None, :], axis=1)  # [N]
        s = tl.where(tok_ok, s * qk_scale_log2, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=0))  # at least one key is valid in every tile
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new)  # [N]
        l_i = l_i * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * k_lat, axis=0)
        m_i = m_new
    seen = l_i > 0
    out = tl.where(seen, acc / tl.where(seen, l_i, 1.0), 0.0)
    lse = tl.where(seen, (m_i + tl.log2(tl.where(seen, l_i, 1.0))) * _LN2, float("-inf"))
    tl.store(out_ptr + (i_b * n_rows + row).to(tl.int64) * _D_LAT + tl.arange(0, _D_LAT),
             out.to(out_ptr.dtype.element_ty))
    i_s, i_h = row // h_q, row % h_q
    tl.store(lse_ptr + (i_b * h_q + i_h) * s_q + i_s, lse)


# ---------------------------------------------------------------------------------------
# Version 2: tiled -- BLOCK_M query rows (all heads of a KV head) share each KV tile
# ---------------------------------------------------------------------------------------

@triton.jit
def _tiled_kernel(q_ptr, kv_ptr, bt_ptr, seqlens_ptr, out_ptr, lse_ptr,
                  h_q, s_q, stride_bt, stride_row, qk_scale_log2,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PAGE: tl.constexpr,
                  CAUSAL: tl.constexpr, IS_FP8: tl.constexpr, DTYPE: tl.constexpr, KV_STAGES: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)  # [M] flattened (i_s, i_h) rows
    i_b = tl.program_id(1)  # the row blocks of one sequence are adjacent in launch order
    seqlen = tl.load(seqlens_ptr + i_b)
    row_ok = rows < s_q * h_q
    n_visible = _row_limits(rows, row_ok, seqlen, h_q, s_q, CAUSAL)  # [M]
    q_lat, q_rope = _load_q_block(q_ptr, i_b, rows, row_ok, s_q * h_q, DTYPE)
    acc, m_i, l_i = _attend_range(q_lat, q_rope, kv_ptr, bt_ptr + i_b.to(tl.int64) * stride_bt, stride_row,
                                  0, seqlen, n_visible, qk_scale_log2, BLOCK_M, BLOCK_N, PAGE, IS_FP8, DTYPE,
                                  KV_STAGES)
    _store_final(out_ptr, lse_ptr, i_b, rows, row_ok, h_q, s_q, acc, m_i, l_i)


# ---------------------------------------------------------------------------------------
# Version 3: split-KV -- the key range is cut into num_splits pieces, merged by LSE
# ---------------------------------------------------------------------------------------

@triton.jit
def _splitkv_kernel(q_ptr, kv_ptr, bt_ptr, seqlens_ptr, o_part_ptr, lse_part_ptr,
                    h_q, s_q, stride_bt, stride_row, qk_scale_log2, num_splits,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PAGE: tl.constexpr,
                    CAUSAL: tl.constexpr, IS_FP8: tl.constexpr, DTYPE: tl.constexpr, KV_STAGES: tl.constexpr):
    """Partial results: slot i_b * num_splits + i_split of o_part [slots, s_q*h_q, 512] fp32
    (normalized within the split) and lse_part [slots, s_q*h_q] fp32 in base 2."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    i_b = tl.program_id(1)
    i_split = tl.program_id(2)
    row_ok = rows < s_q * h_q
    seqlen = tl.load(seqlens_ptr + i_b)
    # split i_split covers whole tiles [lo, hi) of this sequence; late splits may be empty
    tiles_per_split = tl.cdiv(tl.cdiv(seqlen, BLOCK_N), num_splits)
    lo = i_split * tiles_per_split * BLOCK_N
    hi = tl.minimum(lo + tiles_per_split * BLOCK_N, seqlen)
    n_visible = _row_limits(rows, row_ok, seqlen, h_q, s_q, CAUSAL)
    q_lat, q_rope = _load_q_block(q_ptr, i_b, rows, row_ok, s_q * h_q, DTYPE)
    acc, m_i, l_i = _attend_range(q_lat, q_rope, kv_ptr, bt_ptr + i_b.to(tl.int64) * stride_bt, stride_row,
                                  lo, hi, n_visible, qk_scale_log2, BLOCK_M, BLOCK_N, PAGE, IS_FP8, DTYPE,
                                  KV_STAGES)
    _store_partial(o_part_ptr, lse_part_ptr, i_b * num_splits + i_split, rows, row_ok, s_q * h_q, acc, m_i, l_i)


# ---------------------------------------------------------------------------------------
# Version 4: planned -- persistent programs walk a plan's segments (FlashMLA's scheduler)
# ---------------------------------------------------------------------------------------

@triton.jit
def _planned_kernel(q_ptr, kv_ptr, bt_ptr, seqlens_ptr, seg_ptr, part_ptr, out_ptr, lse_ptr,
                    o_part_ptr, lse_part_ptr, h_q, s_q, stride_bt, stride_row, qk_scale_log2,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PAGE: tl.constexpr,
                    CAUSAL: tl.constexpr, IS_FP8: tl.constexpr, DTYPE: tl.constexpr, KV_STAGES: tl.constexpr):
    """Grid (row_blocks, num_parts): row block fastest, so the row blocks of one part run
    together on the same keys. Part p runs segments part_start[p] .. part_start[p+1]-1,
    each (sequence, first token, end token, slot): slot -1 writes out/lse, else a partial."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    part = tl.program_id(1)
    n_rows = s_q * h_q
    row_ok = rows < n_rows
    seg_lo = tl.load(part_ptr + part)
    seg_hi = tl.load(part_ptr + part + 1)
    for j in range(seg_lo, seg_hi):
        i_b, lo, hi, slot = _segment(seg_ptr, j)
        seqlen = tl.load(seqlens_ptr + i_b)
        n_visible = _row_limits(rows, row_ok, seqlen, h_q, s_q, CAUSAL)
        q_lat, q_rope = _load_q_block(q_ptr, i_b, rows, row_ok, n_rows, DTYPE)
        acc, m_i, l_i = _attend_range(q_lat, q_rope, kv_ptr, bt_ptr + i_b.to(tl.int64) * stride_bt, stride_row,
                                      lo, hi, n_visible, qk_scale_log2, BLOCK_M, BLOCK_N, PAGE, IS_FP8, DTYPE,
                                      KV_STAGES)
        if slot < 0:
            _store_final(out_ptr, lse_ptr, i_b, rows, row_ok, h_q, s_q, acc, m_i, l_i)
        else:
            _store_partial(o_part_ptr, lse_part_ptr, slot, rows, row_ok, n_rows, acc, m_i, l_i)


# ---------------------------------------------------------------------------------------
# Host side: the launchers, the one table of versions, the checks
# ---------------------------------------------------------------------------------------

def default_num_splits(b: int, s_q: int, h_q: int, max_seqlen_bound: int, num_sms: int,
                       block_m: int | None = None, block_n: int = 64, min_tiles_per_split: int = 4) -> int:
    """Version 3's split count (mlacourse.schedule.splitkv_num_splits): about two programs
    per SM over the grid, at least min_tiles_per_split KV tiles per split, at most 64.
    max_seqlen_bound bounds the longest sequence (block_table width * page size: no sync)."""
    from mlacourse.schedule import splitkv_num_splits
    block_m = block_m or default_block_m(s_q, h_q)
    return splitkv_num_splits(b, s_q, h_q, max_seqlen_bound, num_sms, block_m, block_n, min_tiles_per_split)


def _tile_options(call: Call, block_m=None, max_block_n=None):
    """BLOCK_M, BLOCK_N, num_warps, num_stages for versions 2-4 (options override)."""
    block_m = call.take("block_m", block_m or default_block_m(call.s_q, call.h_q))
    d_bn, d_warps, d_stages = default_launch(block_m, call.is_fp8)
    d_bn = d_bn if call.gpu else 64  # interpreter: wide tiles, fewer steps
    block_n = call.take("block_n", min(d_bn, max_block_n or d_bn))
    check_tile("block_m", block_m)
    check_tile("block_n", block_n)
    return block_m, block_n, call.take("num_warps", d_warps), call.take("num_stages", d_stages)


def _launch_naive(call: Call):
    block_n = call.take("block_n", 16)
    check_tile("block_n", block_n)
    num_warps = call.take("num_warps", 4)
    return [Launch("naive", _naive_kernel, (call.n_rows, call.b),
                   dict(call.common_args(), out_ptr=call.out, lse_ptr=call.lse),
                   dict(call.common_constexprs(), BLOCK_N=block_n), num_warps)]


def _launch_tiled(call: Call):
    block_m, block_n, warps, stages = _tile_options(call)
    return [Launch(f"tiled BLOCK_M={block_m}", _tiled_kernel, (triton.cdiv(call.n_rows, block_m), call.b),
                   dict(call.common_args(), out_ptr=call.out, lse_ptr=call.lse),
                   dict(call.common_constexprs(), BLOCK_M=block_m, BLOCK_N=block_n, DTYPE=call.dtype,
                        KV_STAGES=stages), warps, stages)]


def _combine_launch(call: Call, o_part, lse_part, combine, max_count):
    return combine_launch(call, o_part, lse_part, combine, max_count)


def _launch_splitkv(call: Call):
    block_m, block_n, warps, stages = _tile_options(call)
    num_splits = call.take("num_splits", None)
    if call.batch_invariant:
        if num_splits not in (None, 1):
            raise ValueError(f"batch_invariant=True runs one split per sequence; got num_splits={num_splits} "
                             f"(the split count follows the batch size, so a sequence's result would too)")
        num_splits = 1
    if num_splits is None:
        num_splits = default_num_splits(call.b, call.s_q, call.h_q, call.block_table.shape[1] * call.page,
                                        sm_count(call.q.device), block_m, block_n)
    if num_splits < 1:
        raise ValueError(f"num_splits must be >= 1, got {num_splits}")
    dev = call.q.device
    o_part = torch.empty(call.b * num_splits, call.n_rows, D_LATENT, dtype=torch.float32, device=dev)
    lse_part = torch.empty(call.b * num_splits, call.n_rows, dtype=torch.float32, device=dev)
    combine = uniform_combine_table(call.b, num_splits, dev)  # every sequence, num_splits pieces
    return [Launch(f"splitkv BLOCK_M={block_m}", _splitkv_kernel,
                   (triton.cdiv(call.n_rows, block_m), call.b, num_splits),
                   dict(call.common_args(), o_part_ptr=o_part, lse_part_ptr=lse_part, num_splits=num_splits),
                   dict(call.common_constexprs(), BLOCK_M=block_m, BLOCK_N=block_n, DTYPE=call.dtype,
                        KV_STAGES=stages), warps, stages),
            _combine_launch(call, o_part, lse_part, combine, num_splits)]


def _get_plan(call: Call, plan, block_m: int, block_n: int) -> DecodePlan:
    num_sms = call.take("num_sms", None)
    if plan is None:
        plan = mla_decode_plan(call.cache_seqlens, call.h_q, call.s_q, num_sms, block_m=block_m, block_n=block_n,
                               batch_invariant=call.batch_invariant)
    elif num_sms is not None:
        raise TypeError("pass either plan= or num_sms=, not both (a plan already fixes its SM count)")
    if call.batch_invariant and not plan.batch_invariant:
        raise ValueError("batch_invariant=True needs a plan made with mla_decode_plan(..., batch_invariant=True) "
                         "(this plan cuts sequences where the batch puts its share boundaries)")
    plan.check(call.b, call.s_q, call.h_q, call.q.device)
    if plan.block_m != block_m:
        raise ValueError(f"the plan was made for block_m={plan.block_m}, the launch uses block_m={block_m}")
    return plan


def _partials(call: Call, plan: DecodePlan):
    dev = call.q.device
    o_part = torch.empty(max(1, plan.num_slots), call.n_rows, D_LATENT, dtype=torch.float32, device=dev)
    lse_part = torch.empty(max(1, plan.num_slots), call.n_rows, dtype=torch.float32, device=dev)
    return o_part, lse_part


def _plan_combine(call: Call, plan: DecodePlan, o_part, lse_part) -> list:
    """The combine launch of a plan's split sequences (none when the plan cut no sequence)."""
    if not plan.combine.shape[0]:
        return []
    return [_combine_launch(call, o_part, lse_part, plan.combine, int(plan.host.combine[:, int(COMBINE_SLOTS)].max()))]


def _launch_planned(call: Call):
    plan = call.take("plan", None)
    block_m, block_n, warps, stages = _tile_options(call, plan.block_m if plan is not None else None,
                                                    plan.block_n if plan is not None else None)
    plan = _get_plan(call, plan, block_m, call.take("plan_block_n", 64))
    if plan.block_n % block_n:
        raise ValueError(f"block_n={block_n} must divide the plan's block_n={plan.block_n} (pieces start on tiles)")
    o_part, lse_part = _partials(call, plan)
    return [Launch(f"planned BLOCK_M={block_m}", _planned_kernel, (plan.row_blocks, plan.num_parts),
                   dict(call.common_args(), seg_ptr=plan.segments, part_ptr=plan.part_start, out_ptr=call.out,
                        lse_ptr=call.lse, o_part_ptr=o_part, lse_part_ptr=lse_part),
                   dict(call.common_constexprs(), BLOCK_M=block_m, BLOCK_N=block_n, DTYPE=call.dtype,
                        KV_STAGES=stages), warps, stages)] + _plan_combine(call, plan, o_part, lse_part)


def _launch_over_plan(call: Call, module):
    """Versions 5 and 6: a Gluon kernel over a plan of module.BLOCK_M rows, then the combine."""
    plan = _get_plan(call, call.take("plan", None), call.take("block_m", module.BLOCK_M), call.take("plan_block_n", 64))
    o_part, lse_part = _partials(call, plan)
    return module.launches(call, plan, o_part, lse_part) + _plan_combine(call, plan, o_part, lse_part)


def _launch_gluon(call: Call):
    from . import gluon_decode  # on use: a triton without Gluon still runs versions 1-4
    return _launch_over_plan(call, gluon_decode)


def _launch_seesaw(call: Call):
    from . import seesaw_decode
    return _launch_over_plan(call, seesaw_decode)


@dataclass(frozen=True)
class Version:
    """One row of the version table: the launcher and what the version can do. Everything
    outside the launcher -- prepare's checks, the tests, the compile report, the benchmark,
    gpu_check.sh, tests/kernel_checklist.py -- reads these fields, never the version's name."""
    number: int
    name: str
    launch: Callable[[object], list]  # a checked call -> its launches (a Call; a SparseCall for "sparse")
    summary: str
    call: str = "dense"  # "dense": block_table + cache_seqlens (mla_decode_with_kvcache); "sparse": top-k
    #                      indices (sparse_decode.sparse_mla_decode_with_kvcache)
    caches: tuple = ("bf16", "fp8")  # rows it reads: "bf16" = 576 values in q's dtype, "fp8" = 656-byte rows
    dtypes: tuple = ("bfloat16", "float16")  # q's dtypes (and a bf16-row cache's)
    min_page: int = 16  # smallest page_block_size (dense calls: a power of two in 16..256 in any case)
    block_m: tuple = (16, 32, 64)  # query rows per program a GPU launch ships (1: one row per program)
    takes_plan: bool = False  # accepts plan= (kernels.plan.mla_decode_plan; make it with make_plan)
    batch_invariant: bool = True  # accepts batch_invariant=True (no sequence's keys split across programs)
    interpreter: bool = True  # runs in Triton's CPU interpreter (else: a GPU only)
    hopper_only: bool = False  # sm_90 only (wgmma, TMA, warp specialization)
    gpu_verified: bool = False  # its out and lse checked against float64 on a GPU (a GPU run sets it)
    dot_operands: str = "q"  # its dots' operand type on a GPU: "q" = q's dtype (K/V dequantized to it, P
    #                          rounded to it before P V), "float32" = no rounding (vector FMAs); the GPU-like
    #                          reference (kernels.reference, mode="gpu") rounds where this says

    @property
    def status(self) -> str:
        """What has been checked, in words (README, BENCHMARKS and the chapters say the same)."""
        if self.gpu_verified:
            return "checked against float64 on a GPU"
        if self.interpreter:
            return "tested in Triton's CPU interpreter; compiled for sm_90; not yet timed on a GPU"
        return "compiled, not yet run on a GPU"

    @property
    def plan_block_m(self) -> int | None:
        """The rows per program its plan must have: fixed when it ships one tile height, else None
        (mla_decode_plan picks from the shape)."""
        return self.block_m[0] if len(self.block_m) == 1 else None

    def make_plan(self, cache_seqlens, h_q: int, s_q: int = 1, **kw) -> DecodePlan:
        """A plan for this version (takes_plan), made once per batch and reused by every layer."""
        if not self.takes_plan:
            raise ValueError(f"version {self.name!r} takes no plan")
        return mla_decode_plan(cache_seqlens, h_q, s_q, block_m=self.plan_block_m, **kw)

    def gpu_operands(self, q_dtype: torch.dtype) -> torch.dtype:
        """The type its dots round K, V and P to on a GPU, for q of q_dtype (the GPU-like reference's
        `operands`)."""
        if self.dot_operands not in ("q", "float32"):
            raise ValueError(f"version {self.name!r}: dot_operands must be 'q' or 'float32', "
                             f"got {self.dot_operands!r}")
        return torch.float32 if self.dot_operands == "float32" else q_dtype

    def runs_on(self, device) -> bool:
        """Whether it can run on a torch device here (a CPU device: Triton's interpreter)."""
        device = torch.device(device)
        if device.type != "cuda":
            return self.interpreter and interpreting()
        return not self.hopper_only or torch.cuda.get_device_capability(device)[0] == 9


_HOPPER = dict(caches=("bf16",), dtypes=("bfloat16",), min_page=64, block_m=(64,), takes_plan=True,
               interpreter=False, hopper_only=True)  # Gluon: TMA pages of 64 keys, 64-row wgmma tiles
# One table: a new version is one launcher function and one row here (CONTRIBUTING.md).
VERSION_TABLE = {v.name: v for v in [
    Version(1, "naive", _launch_naive, "one program per query row, vector FMAs", block_m=(1,),
            dot_operands="float32"),
    Version(2, "tiled", _launch_tiled, "BLOCK_M query rows share each KV tile (tensor cores)"),
    Version(3, "splitkv", _launch_splitkv, "tiled + one split count for all sequences, LSE combine"),
    Version(4, "planned", _launch_planned, "persistent programs over a balanced plan; combine only split sequences",
            takes_plan=True),
    Version(5, "gluon", _launch_gluon, "Hopper Gluon: TMA page tiles, mbarrier pipeline, two warpgroups", **_HOPPER),
    Version(6, "seesaw", _launch_seesaw, "Hopper Gluon: the seesaw -- O split in halves, two warp-specialized "
            "warpgroups, two KV tiles per step", **_HOPPER),
    Version(7, "sparse", sparse_decode.launches, "top-k FP8 rows named by physical indices, dequantized in registers, "
            "-1 entries skipped", call="sparse", caches=("fp8",), min_page=1),
]}
VERSIONS = tuple(n for n, v in VERSION_TABLE.items() if v.call == "dense")  # mla_decode_with_kvcache's versions
DEFAULT_VERSION = "planned"


def _check(q, kv_cache, block_table, cache_seqlens, head_dim_v, is_fp8_kvcache):
    if q.dim() != 4:
        raise ValueError(f"q must be [b, s_q, h_q, {D_K}], got shape {tuple(q.shape)}")
    b, s_q, h_q, d = q.shape
    if d != D_K:
        raise ValueError(f"q's last dim must be {D_K} (512 latent + 64 rope, absorbed query), got {d}")
    if head_dim_v != D_LATENT:
        raise ValueError(f"head_dim_v must be {D_LATENT} (V = the first 512 dims of each cache row), got {head_dim_v}")
    if q.dtype not in (torch.bfloat16, torch.float16):
        raise TypeError(f"q must be bfloat16 or float16, got {q.dtype}")
    if not 1 <= h_q <= 128:
        raise ValueError(f"h_q must be in 1..128, got {h_q}")
    if s_q < 1:
        raise ValueError(f"s_q must be >= 1, got {s_q}")
    if kv_cache.dim() != 4:
        raise ValueError(f"kv_cache must be [num_blocks, page_block_size, h_kv, d], got shape {tuple(kv_cache.shape)}")
    num_blocks, page, h_kv, d_kv = kv_cache.shape
    if h_kv != 1:
        raise ValueError(f"kv_cache has h_kv={h_kv}; absorbed MLA decode has exactly one latent KV head (h_kv=1)")
    want_d, want_dtype = (FP8_ROW_BYTES, torch.uint8) if is_fp8_kvcache else (D_K, q.dtype)
    if d_kv != want_d or kv_cache.dtype != want_dtype:
        what = "FP8 rows (uint8, 656 bytes each)" if is_fp8_kvcache else f"{q.dtype} rows of {D_K} (q's dtype)"
        raise TypeError(f"kv_cache must hold {what}, got {kv_cache.dtype} with last dim {d_kv}"
                        + ("" if is_fp8_kvcache or kv_cache.dtype != torch.uint8 else "; pass is_fp8_kvcache=True"))
    if is_fp8_kvcache and kv_cache.data_ptr() % 16:
        raise ValueError(f"an FP8 kv_cache must start at a 16-byte aligned address (its float32 scales and bf16 "
                         f"rope are read through wider pointers; a GPU faults on misaligned ones), got data_ptr() % 16 "
                         f"= {kv_cache.data_ptr() % 16}: pass a fresh tensor or .clone() it")
    check_page_block_size(page)
    if block_table.dtype != torch.int32 or block_table.dim() != 2 or block_table.shape[0] != b:
        raise TypeError(f"block_table must be int32 [b={b}, max_blocks], got {block_table.dtype} {tuple(block_table.shape)}")
    if cache_seqlens.dtype != torch.int32 or tuple(cache_seqlens.shape) != (b,):
        raise TypeError(f"cache_seqlens must be int32 [b={b}], got {cache_seqlens.dtype} {tuple(cache_seqlens.shape)}")
    for name, t in (("q", q), ("kv_cache", kv_cache), ("cache_seqlens", cache_seqlens)):
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (call .contiguous() first); got strides {t.stride()}")
    if block_table.stride(1) != 1:
        raise ValueError(f"block_table rows must be contiguous, got strides {block_table.stride()}")
    devs = {t.device for t in (q, kv_cache, block_table, cache_seqlens)}
    if len(devs) != 1:
        raise ValueError(f"all inputs must be on one device, got {sorted(str(x) for x in devs)}")


def _check_capabilities(v: Version, call: Call) -> None:
    """The call against the version's row of the table: what it reads and which options it takes."""
    cache = "fp8" if call.is_fp8 else "bf16"
    if cache not in v.caches:
        raise ValueError(f"version {v.name!r} reads {' and '.join(v.caches)} caches only; use version="
                         f"{DEFAULT_VERSION!r} for {cache.upper()} rows")
    dtype = str(call.q.dtype).removeprefix("torch.")
    if dtype not in v.dtypes:
        raise TypeError(f"version {v.name!r} needs {' or '.join(v.dtypes)} q and cache, got {dtype}")
    if call.page < v.min_page:
        raise ValueError(f"version {v.name!r} needs page_block_size >= {v.min_page} (one tile of {v.min_page} keys "
                         f"lies in one page), got {call.page}")
    if call.batch_invariant and not v.batch_invariant:
        raise ValueError(f"version {v.name!r} does not take batch_invariant=True")
    if "plan" in call.options and not v.takes_plan:
        planned = [n for n, w in VERSION_TABLE.items() if w.takes_plan]
        raise TypeError(f"version {v.name!r} takes no plan (only {planned} do); leave plan= out")


def prepare(q, kv_cache, block_table, cache_seqlens, head_dim_v=D_LATENT, softmax_scale=None, causal=False,
            is_fp8_kvcache=False, gpu=None, **options):
    """Check the inputs and build the launches of one call, without running them.
    Returns (version, launches, out, lse)."""
    name = options.pop("version", DEFAULT_VERSION)
    batch_invariant = bool(options.pop("batch_invariant", False))
    if name not in VERSION_TABLE:
        raise ValueError(f"version must be one of {VERSIONS}, got {name!r}")
    version = VERSION_TABLE[name]
    if version.call != "dense":
        raise ValueError(f"version {name!r} takes top-k indices, not a block table: call "
                         f"kernels.sparse_decode.sparse_mla_decode_with_kvcache")
    _check(q, kv_cache, block_table, cache_seqlens, head_dim_v, is_fp8_kvcache)
    scale = softmax_scale if softmax_scale is not None else D_K ** -0.5
    b, s_q, h_q = q.shape[:3]
    out = torch.empty(b, s_q, h_q, D_LATENT, dtype=q.dtype, device=q.device)
    lse = torch.empty(b, h_q, s_q, dtype=torch.float32, device=q.device)
    call = Call(q, kv_cache, block_table, cache_seqlens, out, lse, bool(causal), bool(is_fp8_kvcache),
                float(scale) * LOG2E, options, (not interpreting()) if gpu is None else gpu, batch_invariant)
    _check_capabilities(version, call)
    launches = version.launch(call) if b else []
    if options:
        raise TypeError(f"unknown option(s) for version {name!r}: {sorted(options)}")
    return version, launches, out, lse


def mla_decode_with_kvcache(q, kv_cache, block_table, cache_seqlens, head_dim_v=D_LATENT, softmax_scale=None,
                            causal=False, is_fp8_kvcache=False, **options):
    """Paged MLA decode, FlashMLA's calling convention. Returns (out, lse).

    out [b, s_q, h_q, 512] in q's dtype; lse [b, h_q, s_q] float32, natural log, -inf for
    rows that see no key (FlashMLA: +inf). options:
      version      "naive" | "tiled" | "splitkv" | "planned" (default) | "gluon" | "seesaw" (Gluon: Hopper only);
                   what each reads and takes is its row of VERSION_TABLE
      batch_invariant  True: no sequence's keys are split across programs (splitkv: one split; planned,
                   gluon, seesaw: a plan made with batch_invariant=True), so a sequence's out and lse are
                   bitwise the same whatever else is in the batch; naive and tiled never split
      plan         a plan for this batch (versions with takes_plan: VERSION_TABLE[v].make_plan(...); made
                   here if absent)
      num_sms      SMs to plan for when no plan is given (default: the device's)
      num_splits   split-KV pieces per sequence (splitkv; default: default_num_splits)
      block_m, block_n, num_warps, num_stages   tile shape and launch overrides
    Not checked (it would need a device sync): cache_seqlens[i] <= max_blocks * page_block_size."""
    version, launches, out, lse = prepare(q, kv_cache, block_table, cache_seqlens, head_dim_v, softmax_scale,
                                          causal, is_fp8_kvcache, **options)
    if launches and not version.runs_on(q.device):
        needs = "a Hopper GPU (sm_90)" if version.hopper_only else "a CUDA GPU or Triton's interpreter"
        raise RuntimeError(f"version {version.name!r} cannot run on {q.device} here: it needs {needs}"
                           + ("" if version.interpreter else " (it has no CPU interpreter)"))
    for launch in launches:
        launch()
    return out, lse
