"""Version 6: FlashMLA's seesaw schedule in Gluon -- compiled for sm_90, NOT YET RUN ON A GPU.

Version 5 (kernels/gluon_decode.py) splits the work of one KV tile between two warpgroups
that run in lockstep: while the softmax runs on the CUDA cores, the tensor cores wait.
The seesaw (FlashMLA's April 2025 kernel, docs/20250422-new-kernel-deep-dive.md) makes
the two warpgroups run *different* programs, so that one's softmax overlaps the other's
matrix products -- without a second [64, 512] accumulator, which the register file has no
room for (mlacourse.seesaw.register_budget):

  - O = [O_L | O_R]: warpgroup 0 holds O_L = columns 0..255 in its registers, warpgroup 1
    O_R = columns 256..511 (an m64n256 wgmma accumulator each, 128 registers per thread).
  - Two KV tiles per step (K0, K1: 64 keys each, one page each), one shared running max m.
    Warpgroup 0 computes S0 = Q K0^T and its softmax, warpgroup 1 S1 = Q K1^T and its
    softmax; the factors a0 = exp(m - m0) and a1 = exp(m0 - m1) travel through shared
    memory, P0 and P1 too (in the rope part of their own tile's buffer, which Q K^T no
    longer needs), and each warpgroup multiplies both P's by its own half of V. The step
    order is mlacourse.seesaw.SEESAW_STEPS; mlacourse.seesaw.seesaw_decode computes exactly
    this order in numpy and is checked against the float64 reference (tests/test_seesaw.py).
  - gl.warp_specialize runs the two programs: the default partition (4 warps) is warpgroup 0,
    one worker partition (4 warps) is warpgroup 1. mbarriers carry every hand-over:
        m0_ready   wg0 -> wg1   m0 and a0 in shared memory             (step 3 -> 6)
        m1_ready   wg1 -> wg0   m1, a1 and P1 in shared memory         (steps 6-7 -> 9, 11)
        p0_ready   wg0 -> wg1   P0 * a1 in shared memory               (step 9 -> 10)
        wg1_done   wg1 -> wg0   warpgroup 1 is done with both tiles    (-> next copies)
        q_ready, l0_ready, l1_ready   a piece's Q in shared memory; the two halves of the
                                      running sum at its end
  - KV tiles come by TMA (a [64, 512] latent box and a [64, 64] rope box, as in version 5)
    into two buffers, one per tile of the pair; warpgroup 0 issues the copies. Buffer 0 is
    refilled as soon as warpgroup 1 reports step 10 done, while step 11 runs.
  - Keys past a piece's end: scores -inf, and those V rows zeroed in shared memory by the
    warpgroup that reads that half (0 * NaN would be NaN). Persistent programs walk the
    plan of kernels.plan.mla_decode_plan, like versions 4 and 5.

What Gluon could not express here, and what this kernel does instead:
  - FlashMLA's finer TMA pipeline (9 boxes of [64, 64] per tile, each with its own barrier,
    so that Q K^T starts on the first box) and its extra shared-memory room (the last 64
    columns of Q kept in registers, their shared memory reused for P1). Both are expressible
    in Gluon in principle; this version keeps version 5's two boxes per tile and puts P0, P1
    in the rope buffers instead, which fits in 227 KB without moving Q.
  - The seesaw only pays if the two partitions' instructions really interleave on the SM;
    Gluon states the partitions and their barriers, the hardware's warp schedulers decide
    the interleaving. Whether they do is for a GPU run to show.

Registers. Each warpgroup's share of the register file is set twice: by gl.warp_specialize
(worker_num_regs, WG1_REGS for warpgroup 1; the default partition, warpgroup 0, gets what is
left, kernels/compile_report.py reads both back) and by the register cap the kernel starts
with (MAXNREG, passed to the launch as `maxnreg`). Triton's own cap for 8 warps is
65,536 / 256 = 256 registers, one more than ptxas accepts: ptxas then ignores the cap ("Too
many maxnreg") and every setmaxnreg with it, so both warpgroups were compiled against 255
registers and nothing was rebalanced. With MAXNREG = 255 the split is real: warpgroup 0
(which also keeps P0 in fp32 across its P0 V0L product until a1 arrives, and issues the
copies) gets 256, warpgroup 1 gets 248 -- 504 of the 510 a pair of threads may hold.
The 36 wgmma of S = Q K^T (576 / 16 k-steps) need 72 shared-memory descriptors, one into Q
and one into K per k-step; written out statically they are loop-invariant, the compiler
computed all 72 before the KV loop, and warpgroup 0 spilled them to local memory (36 spill
loads and stores in its loop, triton 3.6). _scores therefore walks the 512 latent dimensions
in a run-time loop of 8 chunks of 64 columns (the chunk c of a [64, 512] NVMMA buffer is the c-th 8 KB of it, which
tests/test_kernel_seesaw.py checks from triton's layouts): the descriptors are made where they
are used, in uniform registers, and the loop has no spill (the compile report reads it off
the whole SASS, per warpgroup).

Limits (as version 5): bf16 caches only, page_block_size 64-256, 64 query rows per program.
Gluon has no CPU interpreter: tests compile this for sm_90 (tests/test_kernel_seesaw.py,
tests/test_kernel_compile.py) and run it against the float64 reference only where a Hopper GPU
is present (tests/test_kernel_gpu_matrix.py: the GPU check's hopper step)."""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, warpgroup_mma,
                                                               warpgroup_mma_wait)

from .dims import D_LATENT
from .gluon_decode import _segment, _tma_load, plan_args
from .launch import Launch
from .tiles import _D_K, _D_LAT, _D_ROPE, _LN2  # the dims as constexprs (gl.constexpr is tl.constexpr)

BLOCK_M = 64  # query rows per program
BLOCK_N = 64  # keys per tile = one TMA box
NUM_WARPS = 4  # the default partition (warpgroup 0); the worker partition adds 4 more
# Registers per thread (see the module docstring): the cap the kernel starts with (at most 255,
# ptxas's limit), and warpgroup 1's setmaxnreg; warpgroup 0 gets the rest of the pair's 2 x 255,
# rounded down to a multiple of 8: 255 + (255 - 248) = 262 -> 256.
MAXNREG = 255
WG1_REGS = gl.constexpr(248)
LATENT_CHUNKS = gl.constexpr(D_LATENT // 64)  # Q K^T over the latent dims: 8 chunks of 64 columns

_D_HALF = gl.constexpr(D_LATENT // 2)
# a shared-memory view with another shape: triton 3.6 names it _reinterpret, 3.9 reinterpret
_reinterpret = getattr(gl.shared_memory_descriptor, "reinterpret", None) or gl.shared_memory_descriptor._reinterpret

# shared row vectors [64] fp32 (index into `vecs`)
_M0, _A0, _M1, _A1, _L0, _L1 = (gl.constexpr(i) for i in range(6))
# barriers (index into `bars`)
_KV0, _KV1, _Q, _M0R, _M1R, _P0R, _WG1, _L0R, _L1R = (gl.constexpr(i) for i in range(9))
_NBARS = gl.constexpr(16)  # 9 used (a power of two is allocated)


@gluon.jit
def _load_tile(lat_desc, rope_desc, bt_row_ptr, tok0, k_lat_buf, k_rope_buf, bar, PAGE: gl.constexpr):
    """TMA copies of keys tok0 .. tok0+63 (one page) into one tile buffer; `bar` counts the bytes."""
    page = gl.load(bt_row_ptr + tok0 // PAGE).to(gl.int32)
    row0 = page * PAGE + tok0 % PAGE  # first row of the tile in the [num_blocks * PAGE, 576] view
    mbarrier.expect(bar, lat_desc.block_type.nbytes + rope_desc.block_type.nbytes)
    _tma_load(lat_desc, [row0, 0], bar, k_lat_buf)
    _tma_load(rope_desc, [row0, 0], bar, k_rope_buf)


@gluon.jit
def _scores(q_lat_s, q_rope_s, k_lat_buf, k_rope_buf, tok0, hi, n_visible, qk_scale_log2, s_layout: gl.constexpr):
    """S = Q K^T of one tile [64, 64] fp32, base-2 scaled, keys a row may not see at -inf.
    The latent part runs as a loop over 8 chunks of 64 columns (the same order of k-steps as
    one [64, 512] product): a chunk's wgmma descriptors are made in the loop, not hoisted in
    front of the KV loop (72 of them spilled there). A [64, 512] NVMMA buffer is its 8 chunks
    of [64, 64] one after another, so the [8, 64, 64] view is the same bytes."""
    q_chunks = _reinterpret(q_lat_s, gl.bfloat16, [LATENT_CHUNKS, 64, 64], q_lat_s.layout)  # [8, 64, 64]
    k_chunks = _reinterpret(k_lat_buf, gl.bfloat16, [LATENT_CHUNKS, 64, 64], k_lat_buf.layout)
    s = warpgroup_mma(q_chunks.index(0), k_chunks.index(0).permute((1, 0)),
                      gl.zeros([64, 64], gl.float32, layout=s_layout), use_acc=False, is_async=True)
    for c in range(1, LATENT_CHUNKS):  # a run-time loop (ptxas unrolls it, descriptors in uniform registers)
        s = warpgroup_mma(q_chunks.index(c), k_chunks.index(c).permute((1, 0)), s, is_async=True)
    s = warpgroup_mma(q_rope_s, k_rope_buf.permute((1, 0)), s, is_async=True)
    s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))
    tok = tok0 + gl.arange(0, 64, layout=gl.SliceLayout(0, s_layout))
    visible = (tok[None, :] < hi) & (tok[None, :] < n_visible[:, None])
    return gl.where(visible, s * qk_scale_log2, float("-inf"))


@gluon.jit
def _factor(m_old, m_new):
    """exp2(m_old - m_new), 1 where nothing has been seen yet (m_new = -inf)."""
    return gl.where(m_new == float("-inf"), 1.0, gl.exp2(m_old - gl.where(m_new == float("-inf"), 0.0, m_new)))


@gluon.jit
def _probs(s, m):
    """exp2(s - m) per row; 0 for masked entries and for rows with nothing seen."""
    return gl.exp2(s - gl.where(m == float("-inf"), 0.0, m)[:, None])


@gluon.jit
def _zero_past_end(k_lat_buf, COL0: gl.constexpr, tok0, hi, ld_layout: gl.constexpr):
    """Zero the V rows (this warpgroup's 256 columns) of keys >= hi in a tile buffer, 16 rows at a
    time (a whole [64, 256] slice in registers next to the O accumulator would spill)."""
    half = k_lat_buf.slice(COL0, 256, dim=1)
    for r in gl.static_range(4):
        if tok0 + 16 * (r + 1) > hi:
            rows = half.slice(16 * r, 16, dim=0)  # [16, 256]
            key = tok0 + 16 * r + gl.arange(0, 16, layout=gl.SliceLayout(1, ld_layout))
            rows.store(gl.where(key[:, None] < hi, rows.load(ld_layout), 0.0))
    fence_async_shared()


@gluon.jit
def _piece(seg_ptr, seqlens_ptr, j, h_q, s_q, rows, CAUSAL: gl.constexpr):
    """Segment j of the plan: (sequence, first token, end token, slot, tiles, keys each row may see)."""
    i_b, lo, hi, slot = _segment(seg_ptr, j)
    seqlen = gl.load(seqlens_ptr + i_b)
    n_rows = s_q * h_q
    if CAUSAL:
        n_visible = gl.where(rows < n_rows, seqlen - s_q + 1 + rows // h_q, 0)
    else:
        n_visible = gl.where(rows < n_rows, seqlen, 0)
    return i_b, lo, hi, slot, gl.cdiv(hi - lo, 64), n_visible


@gluon.jit
def _store_half(out_ptr, o_part_ptr, i_b, slot, rows, n_rows, o, l, COL0: gl.constexpr, o_layout: gl.constexpr):
    """This warpgroup's 256 output columns: o / l to out (slot < 0, q's dtype) or o_part (fp32)."""
    seen = gl.convert_layout(l > 0, gl.SliceLayout(1, o_layout))
    l_o = gl.convert_layout(gl.where(l > 0, l, 1.0), gl.SliceLayout(1, o_layout))
    val = gl.where(seen[:, None], o / l_o[:, None], 0.0)
    rows_o = gl.convert_layout(rows, gl.SliceLayout(1, o_layout))
    cols = COL0 + gl.arange(0, 256, layout=gl.SliceLayout(0, o_layout))
    ok = (rows_o < n_rows)[:, None]
    if slot < 0:
        gl.store(out_ptr + (i_b * n_rows + rows_o).to(gl.int64)[:, None] * _D_LAT + cols[None, :],
                 val.to(gl.bfloat16), mask=ok)
    else:
        gl.store(o_part_ptr + (slot.to(gl.int64) * n_rows + rows_o)[:, None] * _D_LAT + cols[None, :], val, mask=ok)


@gluon.jit
def _warpgroup0(q_ptr, lat_desc, rope_desc, bt_ptr, seqlens_ptr, seg_ptr, part_ptr, out_ptr, lse_ptr, o_part_ptr,
                lse_part_ptr, h_q, s_q, stride_bt, qk_scale_log2, q_lat_s, q_rope_s, k_lat_s, k_rope_s, vecs, bars,
                PAGE: gl.constexpr, CAUSAL: gl.constexpr):
    """Warpgroup 0: O_L, steps 1, 3, 4, 5, 9, 11 of every pair; Q and every TMA copy."""
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, 256, 16])
    ld_layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    n_rows = s_q * h_q
    rows = gl.program_id(0) * 64 + gl.arange(0, 64, layout=row_s)
    part = gl.program_id(1)
    n_pair = 0  # pairs done by this program: the phase of the per-pair barriers
    n_kv1 = 0  # copies into buffer 1 (a pair may have no second tile)
    n_seg = 0  # pieces with at least one tile: the phase of q_ready / l*_ready
    for j in range(gl.load(part_ptr + part), gl.load(part_ptr + part + 1)):
        i_b, lo, hi, slot, n_tiles, n_visible = _piece(seg_ptr, seqlens_ptr, j, h_q, s_q, rows, CAUSAL)
        bt_row_ptr = bt_ptr + i_b.to(gl.int64) * stride_bt
        o_left = gl.zeros([64, 256], gl.float32, layout=o_layout)
        m = gl.full([64], float("-inf"), gl.float32, layout=row_s)
        l0 = gl.zeros([64], gl.float32, layout=row_s)
        if n_tiles > 0:
            _load_tile(lat_desc, rope_desc, bt_row_ptr, lo, k_lat_s.index(0), k_rope_s.index(0), bars.index(_KV0), PAGE)
            if n_tiles > 1:
                _load_tile(lat_desc, rope_desc, bt_row_ptr, lo + 64, k_lat_s.index(1), k_rope_s.index(1),
                           bars.index(_KV1), PAGE)
            d_lat = gl.arange(0, _D_LAT, layout=gl.SliceLayout(0, ld_layout))
            d_rope = gl.arange(0, _D_ROPE, layout=gl.SliceLayout(0, ld_layout))
            for r in gl.static_range(4):  # Q to shared memory, 16 rows at a time
                rows_ld = gl.program_id(0) * 64 + 16 * r + gl.arange(0, 16, layout=gl.SliceLayout(1, ld_layout))
                q_rows = q_ptr + (i_b * n_rows + rows_ld).to(gl.int64) * _D_K
                ok = (rows_ld < n_rows)[:, None]
                q_lat_s.slice(16 * r, 16, dim=0).store(gl.load(q_rows[:, None] + d_lat[None, :], mask=ok, other=0.0))
                q_rope_s.slice(16 * r, 16, dim=0).store(
                    gl.load(q_rows[:, None] + _D_LAT + d_rope[None, :], mask=ok, other=0.0))
            fence_async_shared()
            mbarrier.arrive(bars.index(_Q), count=1)
            for t in range(0, n_tiles, 2):
                tok0 = lo + t * 64
                has1 = t + 1 < n_tiles
                ph = n_pair & 1
                k0_lat = k_lat_s.index(0)
                k1_lat = k_lat_s.index(1)
                # [1] S0 = Q K0^T
                mbarrier.wait(bars.index(_KV0), ph)
                s0 = _scores(q_lat_s, q_rope_s, k0_lat, k_rope_s.index(0), tok0, hi, n_visible, qk_scale_log2,
                             s_layout)
                # [3] the max after K0 and the factor a0 = exp2(m - m0), to warpgroup 1
                m0 = gl.maximum(m, gl.max(s0, axis=1))
                a0 = _factor(m, m0)
                vecs.index(_M0).store(m0)
                vecs.index(_A0).store(a0)
                mbarrier.arrive(bars.index(_M0R), count=1)
                # [4] P0 = exp2(S0 - m0)
                p0 = _probs(s0, m0)
                sum0 = gl.sum(p0, axis=1)
                # [5] O_L = a0 O_L + P0 V0L (P0 from registers)
                if tok0 + 64 > hi:
                    _zero_past_end(k0_lat, 0, tok0, hi, ld_layout)
                o_left = o_left * gl.convert_layout(a0, gl.SliceLayout(1, o_layout))[:, None]
                o_left = warpgroup_mma(gl.convert_layout(p0.to(gl.bfloat16), p_layout), k0_lat.slice(0, 256, dim=1),
                                       o_left, is_async=True)
                # [9] wait for m1, a1 (and P1) from warpgroup 1; P0 moves to m1, into shared memory
                mbarrier.wait(bars.index(_M1R), ph)
                m1 = vecs.index(_M1).load(row_s)
                a1 = vecs.index(_A1).load(row_s)
                p0 = p0 * a1[:, None]
                o_left = warpgroup_mma_wait(num_outstanding=0, deps=(o_left,))
                k_rope_s.index(0).store(p0.to(gl.bfloat16))  # Q K0^T is done with the rope buffer
                fence_async_shared()
                mbarrier.arrive(bars.index(_P0R), count=1)
                # [11] O_L = a1 O_L + P1 V1L, P1 from shared memory. Without a second tile P1 is 0 and
                # the product runs against V0 (its rows past the end already zeroed): it adds exact zeros.
                o_left = o_left * gl.convert_layout(a1, gl.SliceLayout(1, o_layout))[:, None]
                if has1:
                    mbarrier.wait(bars.index(_KV1), n_kv1 & 1)  # complete already: warpgroup 1 used the tile
                    if tok0 + 128 > hi:
                        _zero_past_end(k1_lat, 0, tok0 + 64, hi, ld_layout)
                v1 = k_lat_s.index(has1.to(gl.int32))
                o_left = warpgroup_mma(k_rope_s.index(1), v1.slice(0, 256, dim=1), o_left, is_async=True)
                # buffer 0 is free once warpgroup 1 has finished step 10: the next K0 flies during step 11
                mbarrier.wait(bars.index(_WG1), ph)
                fence_async_shared()
                if t + 2 < n_tiles:
                    _load_tile(lat_desc, rope_desc, bt_row_ptr, tok0 + 128, k0_lat, k_rope_s.index(0),
                               bars.index(_KV0), PAGE)
                o_left = warpgroup_mma_wait(num_outstanding=0, deps=(o_left,))
                if has1:
                    n_kv1 += 1
                if t + 3 < n_tiles:
                    fence_async_shared()
                    _load_tile(lat_desc, rope_desc, bt_row_ptr, tok0 + 192, k1_lat, k_rope_s.index(1),
                               bars.index(_KV1), PAGE)
                l0 = l0 * a0 * a1 + sum0 * a1
                m = m1
                n_pair += 1
            # the running sum's two halves meet
            vecs.index(_L0).store(l0)
            mbarrier.arrive(bars.index(_L0R), count=1)
            mbarrier.wait(bars.index(_L1R), n_seg & 1)
            l0 = l0 + vecs.index(_L1).load(row_s)
            n_seg += 1
        _store_half(out_ptr, o_part_ptr, i_b, slot, rows, n_rows, o_left, l0, 0, o_layout)
        seen = l0 > 0
        lse2 = gl.where(seen, m + gl.log2(gl.where(seen, l0, 1.0)), float("-inf"))  # base 2
        if slot < 0:
            gl.store(lse_ptr + (i_b * h_q + rows % h_q) * s_q + rows // h_q, lse2 * _LN2, mask=rows < n_rows)
        else:
            gl.store(lse_part_ptr + slot.to(gl.int64) * n_rows + rows, lse2, mask=rows < n_rows)


@gluon.jit
def _warpgroup1(seqlens_ptr, seg_ptr, part_ptr, out_ptr, o_part_ptr, h_q, s_q, qk_scale_log2, q_lat_s, q_rope_s,
                k_lat_s, k_rope_s, vecs, bars, CAUSAL: gl.constexpr):
    """Warpgroup 1: O_R, steps 2, 6, 7, 8, 10 of every pair."""
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, 256, 16])
    ld_layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    n_rows = s_q * h_q
    rows = gl.program_id(0) * 64 + gl.arange(0, 64, layout=row_s)
    part = gl.program_id(1)
    n_pair = 0
    n_kv1 = 0
    n_seg = 0
    for j in range(gl.load(part_ptr + part), gl.load(part_ptr + part + 1)):
        i_b, lo, hi, slot, n_tiles, n_visible = _piece(seg_ptr, seqlens_ptr, j, h_q, s_q, rows, CAUSAL)
        o_right = gl.zeros([64, 256], gl.float32, layout=o_layout)
        l1 = gl.zeros([64], gl.float32, layout=row_s)
        if n_tiles > 0:
            mbarrier.wait(bars.index(_Q), n_seg & 1)
            for t in range(0, n_tiles, 2):
                tok0 = lo + t * 64
                has1 = t + 1 < n_tiles
                ph = n_pair & 1
                k0_lat = k_lat_s.index(0)
                k1_lat = k_lat_s.index(1)
                # [2] S1 = Q K1^T (a missing second tile: every score -inf)
                if has1:
                    mbarrier.wait(bars.index(_KV1), n_kv1 & 1)
                    s1 = _scores(q_lat_s, q_rope_s, k1_lat, k_rope_s.index(1), tok0 + 64, hi, n_visible,
                                 qk_scale_log2, s_layout)
                else:
                    s1 = gl.full([64, 64], float("-inf"), gl.float32, layout=s_layout)
                # [6] wait for m0, a0; the max after K1 and a1 = exp2(m0 - m1)
                mbarrier.wait(bars.index(_M0R), ph)
                m0 = vecs.index(_M0).load(row_s)
                a0 = vecs.index(_A0).load(row_s)
                m1 = gl.maximum(m0, gl.max(s1, axis=1))
                a1 = _factor(m0, m1)
                # [7] P1 = exp2(S1 - m1), to shared memory for warpgroup 0 (step 11); all zeros without a
                # second tile (no copy is in flight into buffer 1 then)
                p1 = _probs(s1, m1)
                sum1 = gl.sum(p1, axis=1)
                k_rope_s.index(1).store(p1.to(gl.bfloat16))  # Q K1^T is done with the rope buffer
                vecs.index(_M1).store(m1)
                vecs.index(_A1).store(a1)
                fence_async_shared()
                mbarrier.arrive(bars.index(_M1R), count=1)
                # Q K0^T is done (m0 came after it): zero V0R's rows past the end before it is used
                mbarrier.wait(bars.index(_KV0), ph)  # complete already: warpgroup 0 used the tile
                if tok0 + 64 > hi:
                    _zero_past_end(k0_lat, 256, tok0, hi, ld_layout)
                # [8] O_R = a0 a1 O_R + P1 V1R, P1 from registers (without a second tile: P1 = 0 against V0)
                o_right = o_right * gl.convert_layout(a0 * a1, gl.SliceLayout(1, o_layout))[:, None]
                if has1:
                    if tok0 + 128 > hi:
                        _zero_past_end(k1_lat, 256, tok0 + 64, hi, ld_layout)
                    n_kv1 += 1
                v1 = k_lat_s.index(has1.to(gl.int32))
                o_right = warpgroup_mma(gl.convert_layout(p1.to(gl.bfloat16), p_layout), v1.slice(256, 256, dim=1),
                                        o_right, is_async=True)
                # [10] O_R += P0 V0R once warpgroup 0 has put P0 * a1 in shared memory
                mbarrier.wait(bars.index(_P0R), ph)
                o_right = warpgroup_mma(k_rope_s.index(0), k0_lat.slice(256, 256, dim=1), o_right, is_async=True)
                o_right = warpgroup_mma_wait(num_outstanding=0, deps=(o_right,))
                fence_async_shared()
                mbarrier.arrive(bars.index(_WG1), count=1)  # both buffers may be refilled
                l1 = l1 * a0 * a1 + sum1
                n_pair += 1
            vecs.index(_L1).store(l1)
            mbarrier.arrive(bars.index(_L1R), count=1)
            mbarrier.wait(bars.index(_L0R), n_seg & 1)
            l1 = l1 + vecs.index(_L0).load(row_s)
            n_seg += 1
        _store_half(out_ptr, o_part_ptr, i_b, slot, rows, n_rows, o_right, l1, 256, o_layout)


@gluon.jit
def _seesaw_decode_kernel(q_ptr, lat_desc, rope_desc, bt_ptr, seqlens_ptr, seg_ptr, part_ptr, out_ptr, lse_ptr,
                          o_part_ptr, lse_part_ptr, h_q, s_q, stride_bt, qk_scale_log2,
                          PAGE: gl.constexpr, CAUSAL: gl.constexpr):
    sm_layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    vec_layout: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])  # per [64] row vector
    q_lat_s = gl.allocate_shared_memory(gl.bfloat16, [64, _D_LAT], sm_layout)  # 64 KB
    q_rope_s = gl.allocate_shared_memory(gl.bfloat16, [64, _D_ROPE], sm_layout)  # 8 KB
    k_lat_s = gl.allocate_shared_memory(gl.bfloat16, [2, 64, _D_LAT], lat_desc.layout)  # K0, K1 latent (also V)
    k_rope_s = gl.allocate_shared_memory(gl.bfloat16, [2, 64, _D_ROPE], rope_desc.layout)  # rope, then P0 / P1
    vecs = gl.allocate_shared_memory(gl.float32, [8, 64], vec_layout)  # m0, a0, m1, a1, l0, l1 (2 spare)
    bars = gl.allocate_shared_memory(gl.int64, [_NBARS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(_NBARS):
        mbarrier.init(bars.index(i), count=1)
    fence_async_shared()
    gl.warp_specialize([
        (_warpgroup0, (q_ptr, lat_desc, rope_desc, bt_ptr, seqlens_ptr, seg_ptr, part_ptr, out_ptr, lse_ptr,
                       o_part_ptr, lse_part_ptr, h_q, s_q, stride_bt, qk_scale_log2, q_lat_s, q_rope_s, k_lat_s,
                       k_rope_s, vecs, bars, PAGE, CAUSAL)),
        (_warpgroup1, (seqlens_ptr, seg_ptr, part_ptr, out_ptr, o_part_ptr, h_q, s_q, qk_scale_log2, q_lat_s,
                       q_rope_s, k_lat_s, k_rope_s, vecs, bars, CAUSAL)),
    ], [4], [WG1_REGS])


def launches(call, plan, o_part, lse_part):
    """The seesaw launch for one checked call (kernels.launch.Call) and its plan."""
    args = plan_args(call, plan, o_part, lse_part, "seesaw", BLOCK_M, BLOCK_N)
    return [Launch(f"seesaw BLOCK_M={BLOCK_M}", _seesaw_decode_kernel, (plan.row_blocks, plan.num_parts), args,
                   dict(PAGE=call.page, CAUSAL=bool(call.causal)), NUM_WARPS, 1, (BLOCK_M, BLOCK_N),
                   dict(maxnreg=MAXNREG))]


__all__ = ["launches"]
