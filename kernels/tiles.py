"""The device helpers the Triton decode versions share (versions 1-4 in mla_decode and the
sparse kernel in sparse_decode): where a tile's cache rows are, loading (and dequantizing) a
KV tile, the online-softmax loop over a key range, the query block, and the two stores.

Shapes as in kernels/mla_decode.py: rows of 576 = 512 latent (also V) + 64 rope; a query
"row" is one head of one query token, flattened as row = i_s * h_q + i_h. Softmax runs in
base 2 (scores times softmax_scale * log2 e); lse is stored in natural log.

Also the plan's two records as the planned kernels read them (`_segment`, `_combine_entry`),
with their field offsets named once in kernels/plan.py, and the combine kernel that merges a
split sequence's pieces by their log-sum-exps (`_combine_kernel`)."""
from __future__ import annotations

import triton
import triton.language as tl

from .dims import D_K, D_LATENT, D_ROPE, LOG2E
from .plan import COMBINE_FIRST_SLOT, COMBINE_SEQUENCE, COMBINE_SLOTS, COMBINE_WIDTH, SEG_END, SEG_FIRST, \
    SEG_SEQUENCE, SEG_SLOT, SEGMENT_WIDTH

# the dimensions, as compile-time values the kernels can read
_D_LAT = tl.constexpr(D_LATENT)
_D_ROPE = tl.constexpr(D_ROPE)
_D_K = tl.constexpr(D_K)
_LN2 = tl.constexpr(1.0 / LOG2E)  # base-2 lse * ln 2 = natural lse


@triton.jit
def _segment(seg_ptr, j):
    """Segment j of a plan (kernels.plan): (sequence, first token, end token, slot or -1)."""
    rec = seg_ptr + j * SEGMENT_WIDTH
    return tl.load(rec + SEG_SEQUENCE), tl.load(rec + SEG_FIRST), tl.load(rec + SEG_END), tl.load(rec + SEG_SLOT)


@triton.jit
def _combine_entry(combine_ptr, k):
    """Entry k of a combine table (kernels.plan): (sequence, first slot, slots)."""
    rec = combine_ptr + k * COMBINE_WIDTH
    return tl.load(rec + COMBINE_SEQUENCE), tl.load(rec + COMBINE_FIRST_SLOT), tl.load(rec + COMBINE_SLOTS)


@triton.jit
def _tile_rows(bt_row_ptr, start, tok, tok_ok, stride_row, PAGE: tl.constexpr, BLOCK_N: tl.constexpr):
    """Offsets of the cache rows of tokens `tok` = start + [0, BLOCK_N) of one sequence.

    Token t lives at page bt_row[t // PAGE], slot t % PAGE. When a tile fits in one page
    (BLOCK_N <= PAGE, tiles aligned to BLOCK_N) its page id is one scalar read, which the
    compiler keeps out of the pipelined tile copies; otherwise one id per token. The entry
    of a token without tok_ok is never read (offset 0, row load masked)."""
    if BLOCK_N <= PAGE:
        blk = tl.load(bt_row_ptr + start // PAGE).to(tl.int64)  # the tile's page (a used entry)
    else:
        blk = tl.load(bt_row_ptr + tok // PAGE, mask=tok_ok, other=0).to(tl.int64)  # [N] page ids
    return (blk * PAGE + tok % PAGE) * stride_row  # [N] int64: elements (bf16/fp16) or bytes (FP8)


@triton.jit
def _load_kv_tile(kv_ptr, row, tok_ok, IS_FP8: tl.constexpr, DTYPE: tl.constexpr):
    """Load the cache rows at offsets `row` [BLOCK_N]; rows without tok_ok are not read (0).
    Returns k_lat [BLOCK_N, 512] and k_rope [BLOCK_N, 64] in DTYPE."""
    d_lat = tl.arange(0, _D_LAT)
    d_rope = tl.arange(0, _D_ROPE)
    if IS_FP8:
        # FlashMLA row: 512 e4m3 codes | 4 float32 scales | 64 bf16 rope values
        codes = tl.load(kv_ptr + row[:, None] + d_lat[None, :], mask=tok_ok[:, None], other=0)  # [N, 512] u8
        vals = codes.to(tl.float8e4nv, bitcast=True).to(tl.float32)
        scale_ptr = (kv_ptr + row + _D_LAT).to(tl.pointer_type(tl.float32))  # [N] -> 4 scales each
        scales = tl.load(scale_ptr[:, None] + tl.arange(0, 4)[None, :], mask=tok_ok[:, None], other=0.0)
        vals = tl.reshape(vals, [vals.shape[0], 4, _D_LAT // 4]) * scales[:, :, None]  # tile k of 128 values * scale k
        k_lat = tl.reshape(vals, [vals.shape[0], _D_LAT]).to(DTYPE)
        rope_ptr = (kv_ptr + row + _D_LAT + 16).to(tl.pointer_type(tl.bfloat16))
        k_rope = tl.load(rope_ptr[:, None] + d_rope[None, :], mask=tok_ok[:, None], other=0.0).to(DTYPE)
    else:
        k_lat = tl.load(kv_ptr + row[:, None] + d_lat[None, :], mask=tok_ok[:, None], other=0.0).to(DTYPE)
        k_rope = tl.load(kv_ptr + row[:, None] + _D_LAT + d_rope[None, :], mask=tok_ok[:, None], other=0.0).to(DTYPE)
    return k_lat, k_rope


@triton.jit
def _attend_range(q_lat, q_rope, kv_ptr, bt_row_ptr, stride_row, lo, hi, n_visible, qk_scale_log2,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PAGE: tl.constexpr,
                  IS_FP8: tl.constexpr, DTYPE: tl.constexpr, KV_STAGES: tl.constexpr):
    """Online softmax of BLOCK_M query rows over keys [lo, hi) of one sequence.

    q_lat [BLOCK_M, 512], q_rope [BLOCK_M, 64] in DTYPE; n_visible [BLOCK_M]: row r
    sees keys < n_visible[r] (causal) -- keys outside are masked to -inf.
    Returns acc [BLOCK_M, 512] (unnormalized), m [BLOCK_M] (running max, base-2 scaled
    scores) and l [BLOCK_M] (running sum of exp2(score - m))."""
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, _D_LAT], tl.float32)
    for start in tl.range(lo, hi, BLOCK_N, num_stages=KV_STAGES):  # the compiler pipelines the loads
        tok = start + tl.arange(0, BLOCK_N)
        tok_ok = tok < hi
        kv_rows = _tile_rows(bt_row_ptr, start, tok, tok_ok, stride_row, PAGE, BLOCK_N)  # [N] this tile's rows
        k_lat, k_rope = _load_kv_tile(kv_ptr, kv_rows, tok_ok, IS_FP8, DTYPE)
        s = tl.dot(q_lat, tl.trans(k_lat)) + tl.dot(q_rope, tl.trans(k_rope))  # [M, N] fp32
        s = s * qk_scale_log2
        visible = tok_ok[None, :] & (tok[None, :] < n_visible[:, None])  # [M, N]
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))  # [M]
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # rows with nothing seen yet: avoid inf-inf
        alpha = tl.exp2(m_i - m_safe)  # [M] rescale of what was summed so far
        p = tl.exp2(s - m_safe[:, None])  # [M, N]; masked entries give 0
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(DTYPE), k_lat)  # V = the first 512 dims of K
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def _row_limits(rows, row_ok, seqlen, h_q, s_q, CAUSAL: tl.constexpr):
    """Number of keys each flattened query row (row = i_s * h_q + i_h) may see."""
    if CAUSAL:
        i_s = rows // h_q
        return tl.where(row_ok, seqlen - s_q + 1 + i_s, 0)  # bottom-right aligned
    else:
        return tl.where(row_ok, seqlen, 0)


@triton.jit
def _load_q_block(q_ptr, i_b, rows, row_ok, n_rows, DTYPE: tl.constexpr):
    """q_lat [M, 512], q_rope [M, 64] of query rows `rows` of sequence i_b (masked rows 0)."""
    q_rows = q_ptr + (i_b * n_rows + rows).to(tl.int64) * _D_K  # [M]
    q_lat = tl.load(q_rows[:, None] + tl.arange(0, _D_LAT)[None, :], mask=row_ok[:, None], other=0.0).to(DTYPE)
    q_rope = tl.load(q_rows[:, None] + _D_LAT + tl.arange(0, _D_ROPE)[None, :], mask=row_ok[:, None],
                     other=0.0).to(DTYPE)
    return q_lat, q_rope


@triton.jit
def _store_final(out_ptr, lse_ptr, i_b, rows, row_ok, h_q, s_q, acc, m_i, l_i):
    """out = acc / l in out's dtype and lse = (m + log2 l) * ln 2; rows that saw no key: 0 and -inf."""
    seen = l_i > 0
    l_safe = tl.where(seen, l_i, 1.0)
    out = tl.where(seen[:, None], acc / l_safe[:, None], 0.0)
    lse = tl.where(seen, (m_i + tl.log2(l_safe)) * _LN2, float("-inf"))
    o_rows = out_ptr + (i_b * s_q * h_q + rows).to(tl.int64) * _D_LAT
    tl.store(o_rows[:, None] + tl.arange(0, _D_LAT)[None, :], out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])
    i_s, i_h = rows // h_q, rows % h_q
    tl.store(lse_ptr + (i_b * h_q + i_h) * s_q + i_s, lse, mask=row_ok)


@triton.jit
def _store_partial(o_part_ptr, lse_part_ptr, slot, rows, row_ok, n_rows, acc, m_i, l_i):
    """One piece of a split sequence: o_part[slot, rows] = acc / l (fp32), lse_part in base 2
    (-inf: the piece saw no key for that row)."""
    seen = l_i > 0
    l_safe = tl.where(seen, l_i, 1.0)
    part = slot.to(tl.int64) * n_rows + rows  # [M]
    tl.store(o_part_ptr + part[:, None] * _D_LAT + tl.arange(0, _D_LAT)[None, :],
             tl.where(seen[:, None], acc / l_safe[:, None], 0.0), mask=row_ok[:, None])
    tl.store(lse_part_ptr + part, tl.where(seen, m_i + tl.log2(l_safe), float("-inf")), mask=row_ok)


@triton.jit
def _combine_kernel(o_part_ptr, lse_part_ptr, combine_ptr, out_ptr, lse_ptr, h_q, s_q,
                    SPLITS_P2: tl.constexpr):
    """One program per (split sequence, query row). combine [n, 3]: (sequence, first slot,
    slots). out = sum_i w_i * o_i with w_i = exp2(lse_i - lse), lse = log2(sum_i exp2(lse_i))
    -- mlacourse.attention.merge_attention. Shared by every version that splits a sequence's
    keys (3-6) and by the sparse kernel's split over the top-k list."""
    row = tl.program_id(0)
    k = tl.program_id(1)
    n_rows = s_q * h_q
    i_b, base, count = _combine_entry(combine_ptr, k)
    splits = tl.arange(0, SPLITS_P2)
    part = (base + splits).to(tl.int64) * n_rows + row  # [SPLITS_P2]
    lse_parts = tl.load(lse_part_ptr + part, mask=splits < count, other=float("-inf"))
    m = tl.max(lse_parts, axis=0)
    m_safe = tl.where(m == float("-inf"), 0.0, m)
    total = tl.sum(tl.exp2(lse_parts - m_safe), axis=0)
    seen = total > 0
    lse2 = tl.where(seen, m_safe + tl.log2(tl.where(seen, total, 1.0)), float("-inf"))
    lse2_safe = tl.where(seen, lse2, 0.0)
    acc = tl.zeros([_D_LAT], tl.float32)
    for i in range(0, count):
        p = (base + i).to(tl.int64) * n_rows + row
        w = tl.exp2(tl.load(lse_part_ptr + p) - lse2_safe)  # 0 for a piece that saw no key
        acc += w * tl.load(o_part_ptr + p * _D_LAT + tl.arange(0, _D_LAT))
    tl.store(out_ptr + (i_b * n_rows + row).to(tl.int64) * _D_LAT + tl.arange(0, _D_LAT),
             acc.to(out_ptr.dtype.element_ty))
    i_s, i_h = row // h_q, row % h_q
    tl.store(lse_ptr + (i_b * h_q + i_h) * s_q + i_s, lse2 * _LN2)
