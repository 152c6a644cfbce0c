"""Version 5: MLA decode for Hopper in Gluon -- compiled for sm_90, NOT YET RUN ON A GPU.

What `tl.dot` cannot express (kernels/compile_report.py shows it on the SASS of versions
2-4): with 64 query rows and 8 warps, Triton gives a chained dot all warps along M, so both
warpgroups compute the whole QK^T (executed/useful MMA = 1.53), and its pipeliner waits for
every copy before the MMAs. Gluon takes the layouts and the pipeline into our hands:

  - KV tiles of 64 keys (FlashMLA's page and tile) come in by TMA: one [64, 512] latent box
    and one [64, 64] rope box per tile, into a 2-stage ring of shared-memory buffers, each
    with an mbarrier. Tile t+1's copies are issued before tile t's MMAs, so they are in
    flight while the tensor cores work.
  - Two warpgroups, warps_per_cta = [4, 2] for both products: for S = Q K^T [64, 64] each
    warpgroup takes its own 32 keys of the tile (m64n32 wgmmas); P goes through shared
    memory, and for O += P V [64, 512] each warpgroup produces its own 256 output columns
    (m64n256). No MMA is computed twice (executed/useful = 1.00); each thread holds 128
    accumulator registers.
  - Keys past the end of a sequence inside the last tile: their scores are masked to -inf,
    and their V rows (which may hold anything -- NaN poison in the tests) are zero-filled in
    shared memory before the PV product (0 * NaN would be NaN).
  - Persistent programs walk a plan from kernels.plan.mla_decode_plan, like version 4.

Limits: bf16 caches only (no FP8 path), page_block_size 64, 128 or 256 (a tile must lie in
one page), q and the cache in bf16, 64 rows per program. FlashMLA's "seesaw" schedule
(one warpgroup's softmax overlapping the other's MMA) is not attempted: the warpgroups
here run in lockstep.

Gluon has no CPU interpreter: tests compile this for sm_90 (tests/test_kernel_gluon.py)
and run it against the float64 reference only where a Hopper GPU is present."""
from __future__ import annotations

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                               warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from .dims import D_K, D_LATENT, D_ROPE
from .launch import Launch
from .tiles import _D_K, _D_LAT, _D_ROPE, _LN2  # the dims as constexprs (gl.constexpr is tl.constexpr)
from .plan import SEG_END, SEG_FIRST, SEG_SEQUENCE, SEG_SLOT, SEGMENT_WIDTH

# The one API difference between the two tritons this must build with: triton 3.6 names the
# TMA load async_copy_global_to_shared; 3.9 renamed it async_load (the old name now raises).
_tma_load = tma.async_load if hasattr(tma, "async_load") else tma.async_copy_global_to_shared
BLOCK_M = 64  # query rows per program (two warpgroups of 4 warps)
BLOCK_N = 64  # keys per tile = one TMA box
STAGES = 2  # KV tiles in the shared-memory ring
NUM_WARPS = 8



@gluon.jit
def _segment(seg_ptr, j):
    """Segment j of a plan (kernels.plan): (sequence, first token, end token, slot or -1)."""
    rec = seg_ptr + j * SEGMENT_WIDTH
    return gl.load(rec + SEG_SEQUENCE), gl.load(rec + SEG_FIRST), gl.load(rec + SEG_END), gl.load(rec + SEG_SLOT)


@gluon.jit
def _issue_tile(lat_desc, rope_desc, bt_row_ptr, tok0, k_lat_s, k_rope_s, bars, it,
                PAGE: gl.constexpr, STAGES: gl.constexpr):
    """Start the TMA copies of the tile of keys tok0 .. tok0+63 (one page) into ring slot it % STAGES."""
    page = gl.load(bt_row_ptr + tok0 // PAGE).to(gl.int32)
    row0 = page * PAGE + tok0 % PAGE  # first cache row of the tile in the [num_blocks * PAGE, 576] view
    buf = it % STAGES
    bar = bars.index(buf)
    mbarrier.expect(bar, lat_desc.block_type.nbytes + rope_desc.block_type.nbytes)
    _tma_load(lat_desc, [row0, 0], bar, k_lat_s.index(buf))
    _tma_load(rope_desc, [row0, 0], bar, k_rope_s.index(buf))


@gluon.jit
def _gluon_decode_kernel(q_ptr, lat_desc, rope_desc, bt_ptr, seqlens_ptr, seg_ptr, part_ptr, out_ptr, lse_ptr,
                         o_part_ptr, lse_part_ptr, h_q, s_q, stride_bt, qk_scale_log2,
                         PAGE: gl.constexpr, CAUSAL: gl.constexpr, STAGES: gl.constexpr):
    BM: gl.constexpr = 64
    BN: gl.constexpr = 64
    # S [64, 64]: warpgroup w takes keys 32w .. 32w+31; O [64, 512]: warpgroup w takes columns 256w ..
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2], instr_shape=[16, 32, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2],
                                                       instr_shape=[16, 256, 16])
    ld_layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [8, 1], [1, 0])  # plain loads and stores
    sm_layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    col_s: gl.constexpr = gl.SliceLayout(0, s_layout)
    row_o: gl.constexpr = gl.SliceLayout(1, o_layout)
    col_o: gl.constexpr = gl.SliceLayout(0, o_layout)

    q_lat_s = gl.allocate_shared_memory(gl.bfloat16, [BM, _D_LAT], sm_layout)
    q_rope_s = gl.allocate_shared_memory(gl.bfloat16, [BM, _D_ROPE], sm_layout)
    k_lat_s = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BN, _D_LAT], lat_desc.layout)
    k_rope_s = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BN, _D_ROPE], rope_desc.layout)
    p_s = gl.allocate_shared_memory(gl.bfloat16, [BM, BN], sm_layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)

    n_rows = s_q * h_q
    rows_ld = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, ld_layout))
    rows_s = gl.program_id(0) * BM + gl.arange(0, BM, layout=row_s)
    rows_o = gl.program_id(0) * BM + gl.arange(0, BM, layout=row_o)
    part = gl.program_id(1)
    seg_lo = gl.load(part_ptr + part)
    seg_hi = gl.load(part_ptr + part + 1)
    it = 0  # tiles issued by this program so far: ring slot it % STAGES, phase (it // STAGES) & 1
    for j in range(seg_lo, seg_hi):
        i_b, lo, hi, slot = _segment(seg_ptr, j)
        seqlen = gl.load(seqlens_ptr + i_b)
        bt_row_ptr = bt_ptr + i_b.to(gl.int64) * stride_bt
        n_tiles = gl.cdiv(hi - lo, BN)
        if n_tiles > 0:
            _issue_tile(lat_desc, rope_desc, bt_row_ptr, lo, k_lat_s, k_rope_s, bars, it, PAGE, STAGES)
        # this piece's query rows -> shared memory (the wgmma A operand)
        q_rows = q_ptr + (i_b * n_rows + rows_ld).to(gl.int64) * _D_K
        row_ok_ld = rows_ld < n_rows
        d_lat = gl.arange(0, _D_LAT, layout=gl.SliceLayout(0, ld_layout))
        d_rope = gl.arange(0, _D_ROPE, layout=gl.SliceLayout(0, ld_layout))
        q_lat_s.store(gl.load(q_rows[:, None] + d_lat[None, :], mask=row_ok_ld[:, None], other=0.0))
        q_rope_s.store(gl.load(q_rows[:, None] + _D_LAT + d_rope[None, :], mask=row_ok_ld[:, None], other=0.0))
        fence_async_shared()
        if CAUSAL:
            n_visible = gl.where(rows_s < n_rows, seqlen - s_q + 1 + rows_s // h_q, 0)
        else:
            n_visible = gl.where(rows_s < n_rows, seqlen, 0)
        m_i = gl.full([BM], float("-inf"), gl.float32, layout=row_s)
        l_i = gl.full([BM], 0.0, gl.float32, layout=row_s)
        acc = gl.zeros([BM, _D_LAT], gl.float32, layout=o_layout)
        for t in range(n_tiles):
            tok0 = lo + t * BN
            if t + 1 < n_tiles:  # the next tile's copies fly while this tile's MMAs run
                _issue_tile(lat_desc, rope_desc, bt_row_ptr, tok0 + BN, k_lat_s, k_rope_s, bars, it + 1, PAGE,
                            STAGES)
            buf = it % STAGES
            mbarrier.wait(bars.index(buf), (it // STAGES) & 1)
            k_lat = k_lat_s.index(buf)
            s = warpgroup_mma(q_lat_s, k_lat.permute((1, 0)), gl.zeros([BM, BN], gl.float32, layout=s_layout),
                              use_acc=False, is_async=True)
            s = warpgroup_mma(q_rope_s, k_rope_s.index(buf).permute((1, 0)), s, is_async=True)
            s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))
            tok = tok0 + gl.arange(0, BN, layout=col_s)
            visible = (tok[None, :] < hi) & (tok[None, :] < n_visible[:, None])
            s = gl.where(visible, s * qk_scale_log2, float("-inf"))
            m_new = gl.maximum(m_i, gl.max(s, axis=1))
            m_safe = gl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = gl.exp2(m_i - m_safe)
            p = gl.exp2(s - m_safe[:, None])
            l_i = l_i * alpha + gl.sum(p, axis=1)
            m_i = m_new
            if tok0 + BN > hi:  # last, partial tile: zero the V rows past the end before P V
                key_ld = tok0 + gl.arange(0, BN, layout=gl.SliceLayout(1, ld_layout))
                v = k_lat.load(ld_layout)
                k_lat.store(gl.where(key_ld[:, None] < hi, v, 0.0))
            p_s.store(p.to(gl.bfloat16))
            fence_async_shared()
            acc = acc * gl.convert_layout(alpha, row_o)[:, None]
            acc = warpgroup_mma(p_s, k_lat, acc, is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
            it += 1
        seen = l_i > 0
        l_safe = gl.where(seen, l_i, 1.0)
        out = acc / gl.convert_layout(l_safe, row_o)[:, None]
        out = gl.where(gl.convert_layout(seen, row_o)[:, None], out, 0.0)
        cols = gl.arange(0, _D_LAT, layout=col_o)
        row_ok_o = rows_o < n_rows
        if slot < 0:
            o_rows = out_ptr + (i_b * n_rows + rows_o).to(gl.int64) * _D_LAT
            gl.store(o_rows[:, None] + cols[None, :], out.to(gl.bfloat16), mask=row_ok_o[:, None])
            lse = gl.where(seen, (m_i + gl.log2(l_safe)) * _LN2, float("-inf"))
            i_s = rows_s // h_q
            i_h = rows_s % h_q
            gl.store(lse_ptr + (i_b * h_q + i_h) * s_q + i_s, lse, mask=rows_s < n_rows)
        else:
            prow = slot.to(gl.int64) * n_rows + rows_o
            gl.store(o_part_ptr + prow[:, None] * _D_LAT + cols[None, :], out, mask=row_ok_o[:, None])
            lse2 = gl.where(seen, m_i + gl.log2(l_safe), float("-inf"))
            gl.store(lse_part_ptr + slot.to(gl.int64) * n_rows + rows_s, lse2, mask=rows_s < n_rows)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(i))


def descriptors(kv_cache):
    """TMA descriptors over the cache viewed as [num_blocks * page, 576] rows: a [64, 512]
    box at column 0 (latent, also V) and a [64, 64] box at column 512 (rope)."""
    rows = kv_cache.shape[0] * kv_cache.shape[1]
    flat = kv_cache.view(rows, D_K)
    layout = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    lat = TensorDescriptor(flat, [rows, D_LATENT], [D_K, 1], [BLOCK_N, D_LATENT], layout)
    rope = TensorDescriptor(flat[:, D_LATENT:], [rows, D_ROPE], [D_K, 1], [BLOCK_N, D_ROPE], layout)
    return lat, rope


def plan_args(call, plan, o_part, lse_part, version: str, block_m: int, block_n: int) -> dict:
    """The kernel arguments of versions 5 and 6, after the checks TMA adds to VERSION_TABLE's
    (prepare has checked the cache format, the dtype and the page size against the table)."""
    if plan.block_m != block_m or plan.block_n % block_n:
        raise ValueError(f"version {version!r} needs a plan with block_m={block_m} and block_n a multiple of {block_n}")
    if call.kv_cache.data_ptr() % 16:
        raise ValueError(f"version {version!r} needs a 16-byte aligned kv_cache (TMA)")
    lat, rope = descriptors(call.kv_cache)
    return dict(q_ptr=call.q, lat_desc=lat, rope_desc=rope, bt_ptr=call.block_table, seqlens_ptr=call.cache_seqlens,
                seg_ptr=plan.segments, part_ptr=plan.part_start, out_ptr=call.out, lse_ptr=call.lse,
                o_part_ptr=o_part, lse_part_ptr=lse_part, h_q=call.h_q, s_q=call.s_q,
                stride_bt=call.block_table.stride(0), qk_scale_log2=call.qk_scale_log2)


def launches(call, plan, o_part, lse_part):
    """The Gluon launch for one checked call (kernels.launch.Call) and its plan."""
    args = plan_args(call, plan, o_part, lse_part, "gluon", BLOCK_M, BLOCK_N)
    return [Launch(f"gluon BLOCK_M={BLOCK_M}", _gluon_decode_kernel, (plan.row_blocks, plan.num_parts), args,
                   dict(PAGE=call.page, CAUSAL=bool(call.causal), STAGES=STAGES), NUM_WARPS, 1, (BLOCK_M, BLOCK_N))]


__all__ = ["launches", "plan_args", "descriptors", "triton"]
