"""MLA decode over a paged latent cache, in Triton: three versions, naive to fast.

After weight absorption, MLA decode is multi-query attention with one shared KV head
of width 576 (512 latent + 64 rope) whose first 512 dims double as V:

  q             [b, s_q, h_q, 576]   absorbed queries, bf16 or fp16
  kv_cache      [num_blocks, page_block_size, 1, 576]   (or uint8 [..., 656] for FP8)
  block_table   [b, max_blocks] int32
  cache_seqlens [b] int32
  out           [b, s_q, h_q, 512]   q's dtype
  lse           [b, h_q, s_q] float32, natural log; -inf (and out 0) for rows that see no key

The versions (choose with version=...):
  "naive"    one program per query row (one head of one query token); loops over the
             keys with vector FMAs. Every head re-reads the whole cache: h_q*s_q passes.
  "tiled"    one program per block of BLOCK_M query rows (heads x query tokens share
             the single KV head -- the MQA insight); QK and PV are tensor-core dots on a
             [BLOCK_M, BLOCK_N] tile; the cache is read once per row block.
  "splitkv"  tiled, plus the key range of each sequence cut into num_splits pieces that
             run in parallel (flash-decoding); a second kernel merges the partial
             results with their log-sum-exps. The default.
Each version reads bf16/fp16 caches and FlashMLA's FP8 rows (is_fp8_kvcache=True):
_load_kv_tile dequantizes a tile in registers.

Softmax runs in base 2: scores are multiplied by softmax_scale*log2(e) once, exp2
replaces exp, and lse is converted back to natural log when it is stored."""
from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

D_LATENT, D_ROPE = 512, 64
D_K = D_LATENT + D_ROPE  # 576
FP8_ROW_BYTES = D_LATENT + 16 + 2 * D_ROPE  # 656
LOG2E = 1.4426950408889634
VERSIONS = ("naive", "tiled", "splitkv")


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


# ---------------------------------------------------------------------------------------
# Shared device helpers
# ---------------------------------------------------------------------------------------

@triton.jit
def _tile_rows(bt_row_ptr, tok, tok_ok, stride_row, PAGE: tl.constexpr):
    """Offsets of the cache rows of tokens `tok` [BLOCK_N] of one sequence.

    Token t lives at page bt_row[t // PAGE], slot t % PAGE. The block-table entry of a
    token without tok_ok is never read (its offset is 0 and its row load is masked)."""
    blk = tl.load(bt_row_ptr + tok // PAGE, mask=tok_ok, other=0).to(tl.int64)  # [N] page ids
    return (blk * PAGE + tok % PAGE) * stride_row  # [N] int64: elements (bf16/fp16) or bytes (FP8)


@triton.jit
def _load_kv_tile(kv_ptr, row, tok_ok, IS_FP8: tl.constexpr, DTYPE: tl.constexpr):
    """Load the cache rows at offsets `row` [BLOCK_N]; rows without tok_ok are not read (0).
    Returns k_lat [BLOCK_N, 512] and k_rope [BLOCK_N, 64] in DTYPE."""
    d_lat = tl.arange(0, 512)
    d_rope = tl.arange(0, 64)
    if IS_FP8:
        # FlashMLA row: 512 e4m3 codes | 4 float32 scales | 64 bf16 rope values
        codes = tl.load(kv_ptr + row[:, None] + d_lat[None, :], mask=tok_ok[:, None], other=0)  # [N, 512] u8
        vals = codes.to(tl.float8e4nv, bitcast=True).to(tl.float32)
        scale_ptr = (kv_ptr + row + 512).to(tl.pointer_type(tl.float32))  # [N] -> 4 scales each
        scales = tl.load(scale_ptr[:, None] + tl.arange(0, 4)[None, :], mask=tok_ok[:, None], other=0.0)
        vals = tl.reshape(vals, [vals.shape[0], 4, 128]) * scales[:, :, None]  # tile k of 128 values * scale k
        k_lat = tl.reshape(vals, [vals.shape[0], 512]).to(DTYPE)
        rope_ptr = (kv_ptr + row + 528).to(tl.pointer_type(tl.bfloat16))
        k_rope = tl.load(rope_ptr[:, None] + d_rope[None, :], mask=tok_ok[:, None], other=0.0).to(DTYPE)
    else:
        k_lat = tl.load(kv_ptr + row[:, None] + d_lat[None, :], mask=tok_ok[:, None], other=0.0).to(DTYPE)
        k_rope = tl.load(kv_ptr + row[:, None] + 512 + d_rope[None, :], mask=tok_ok[:, None], other=0.0).to(DTYPE)
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
    acc = tl.zeros([BLOCK_M, 512], tl.float32)
    tok = lo + tl.arange(0, BLOCK_N)  # [N]
    kv_rows = _tile_rows(bt_row_ptr, tok, tok < hi, stride_row, PAGE)  # [N] offsets of the first tile's rows
    for start in tl.range(lo, hi, BLOCK_N, num_stages=KV_STAGES):  # up to KV_STAGES tiles in flight
        tok = start + tl.arange(0, BLOCK_N)
        tok_ok = tok < hi
        k_lat, k_rope = _load_kv_tile(kv_ptr, kv_rows, tok_ok, IS_FP8, DTYPE)
        # the next tile's page ids, one iteration ahead: the KV loads never wait on a table read
        kv_rows = _tile_rows(bt_row_ptr, tok + BLOCK_N, tok + BLOCK_N < hi, stride_row, PAGE)
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


# ---------------------------------------------------------------------------------------
# Version 1: naive -- one query row per program, vector FMAs, no tensor cores
# ---------------------------------------------------------------------------------------

@triton.jit
def _naive_kernel(q_ptr, kv_ptr, bt_ptr, seqlens_ptr, out_ptr, lse_ptr,
                  h_q, s_q, stride_bt, stride_row, qk_scale_log2,
                  BLOCK_N: tl.constexpr, PAGE: tl.constexpr, CAUSAL: tl.constexpr, IS_FP8: tl.constexpr):
    i_b = tl.program_id(0)
    row = tl.program_id(1)  # row = i_s * h_q + i_h of the flattened [s_q * h_q] query rows
    n_rows = s_q * h_q
    seqlen = tl.load(seqlens_ptr + i_b)
    hi = seqlen
    if CAUSAL:
        hi = tl.minimum(seqlen - s_q + 1 + row // h_q, seqlen)  # bottom-right aligned
    q_row = q_ptr + (i_b * n_rows + row).to(tl.int64) * 576
    q_lat = tl.load(q_row + tl.arange(0, 512)).to(tl.float32)  # [512]
    q_rope = tl.load(q_row + 512 + tl.arange(0, 64)).to(tl.float32)  # [64]
    bt_row_ptr = bt_ptr + i_b.to(tl.int64) * stride_bt
    m_i = float("-inf")
    l_i = 0.0
    acc = tl.zeros([512], tl.float32)
    for start in range(0, hi, BLOCK_N):
        tok = start + tl.arange(0, BLOCK_N)
        tok_ok = tok < hi
        kv_rows = _tile_rows(bt_row_ptr, tok, tok_ok, stride_row, PAGE)  # [N] offsets of this tile's rows
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
    lse = tl.where(seen, (m_i + tl.log2(tl.where(seen, l_i, 1.0))) / 1.4426950408889634, float("-inf"))
    tl.store(out_ptr + (i_b * n_rows + row).to(tl.int64) * 512 + tl.arange(0, 512),
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
    i_b = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)  # [M] flattened (i_s, i_h) rows
    n_rows = s_q * h_q
    row_ok = rows < n_rows
    seqlen = tl.load(seqlens_ptr + i_b)
    n_visible = _row_limits(rows, row_ok, seqlen, h_q, s_q, CAUSAL)  # [M]
    q_rows = q_ptr + (i_b * n_rows + rows).to(tl.int64) * 576  # [M]
    q_lat = tl.load(q_rows[:, None] + tl.arange(0, 512)[None, :], mask=row_ok[:, None], other=0.0).to(DTYPE)
    q_rope = tl.load(q_rows[:, None] + 512 + tl.arange(0, 64)[None, :], mask=row_ok[:, None], other=0.0).to(DTYPE)
    acc, m_i, l_i = _attend_range(q_lat, q_rope, kv_ptr, bt_ptr + i_b.to(tl.int64) * stride_bt, stride_row,
                                  0, seqlen, n_visible, qk_scale_log2, BLOCK_M, BLOCK_N, PAGE, IS_FP8, DTYPE,
                                  KV_STAGES)
    seen = l_i > 0
    l_safe = tl.where(seen, l_i, 1.0)
    out = tl.where(seen[:, None], acc / l_safe[:, None], 0.0)
    lse = tl.where(seen, (m_i + tl.log2(l_safe)) / 1.4426950408889634, float("-inf"))
    o_rows = out_ptr + (i_b * n_rows + rows).to(tl.int64) * 512
    tl.store(o_rows[:, None] + tl.arange(0, 512)[None, :], out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])
    i_s, i_h = rows // h_q, rows % h_q
    tl.store(lse_ptr + (i_b * h_q + i_h) * s_q + i_s, lse, mask=row_ok)


# ---------------------------------------------------------------------------------------
# Version 3: split-KV -- the key range is cut into num_splits pieces, merged by LSE
# ---------------------------------------------------------------------------------------

@triton.jit
def _splitkv_kernel(q_ptr, kv_ptr, bt_ptr, seqlens_ptr, o_part_ptr, lse_part_ptr,
                    h_q, s_q, stride_bt, stride_row, qk_scale_log2, num_splits,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PAGE: tl.constexpr,
                    CAUSAL: tl.constexpr, IS_FP8: tl.constexpr, DTYPE: tl.constexpr, KV_STAGES: tl.constexpr):
    """Partial results: o_part [b, num_splits, s_q*h_q, 512] fp32 (normalized within the
    split), lse_part [b, num_splits, s_q*h_q] fp32 in base 2 (-inf: the split saw no key)."""
    i_b = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    i_split = tl.program_id(2)
    n_rows = s_q * h_q
    row_ok = rows < n_rows
    seqlen = tl.load(seqlens_ptr + i_b)
    # split i_split covers whole tiles [lo, hi) of this sequence; late splits may be empty
    tiles_per_split = tl.cdiv(tl.cdiv(seqlen, BLOCK_N), num_splits)
    lo = i_split * tiles_per_split * BLOCK_N
    hi = tl.minimum(lo + tiles_per_split * BLOCK_N, seqlen)
    n_visible = _row_limits(rows, row_ok, seqlen, h_q, s_q, CAUSAL)
    q_rows = q_ptr + (i_b * n_rows + rows).to(tl.int64) * 576
    q_lat = tl.load(q_rows[:, None] + tl.arange(0, 512)[None, :], mask=row_ok[:, None], other=0.0).to(DTYPE)
    q_rope = tl.load(q_rows[:, None] + 512 + tl.arange(0, 64)[None, :], mask=row_ok[:, None], other=0.0).to(DTYPE)
    acc, m_i, l_i = _attend_range(q_lat, q_rope, kv_ptr, bt_ptr + i_b.to(tl.int64) * stride_bt, stride_row,
                                  lo, hi, n_visible, qk_scale_log2, BLOCK_M, BLOCK_N, PAGE, IS_FP8, DTYPE,
                                  KV_STAGES)
    seen = l_i > 0
    l_safe = tl.where(seen, l_i, 1.0)
    part = (i_b * num_splits + i_split).to(tl.int64) * n_rows + rows  # [M]
    tl.store(o_part_ptr + part[:, None] * 512 + tl.arange(0, 512)[None, :],
             tl.where(seen[:, None], acc / l_safe[:, None], 0.0), mask=row_ok[:, None])
    tl.store(lse_part_ptr + part, tl.where(seen, m_i + tl.log2(l_safe), float("-inf")), mask=row_ok)


@triton.jit
def _combine_kernel(o_part_ptr, lse_part_ptr, out_ptr, lse_ptr, h_q, s_q, num_splits,
                    SPLITS_P2: tl.constexpr):
    """One program per (sequence, query row): out = sum_i w_i * o_i with
    w_i = exp2(lse_i - lse) and lse = log2(sum_i exp2(lse_i)) -- mlacourse's merge_attention."""
    i_b = tl.program_id(0)
    row = tl.program_id(1)
    n_rows = s_q * h_q
    splits = tl.arange(0, SPLITS_P2)
    part = (i_b * num_splits + splits).to(tl.int64) * n_rows + row  # [SPLITS_P2]
    lse_parts = tl.load(lse_part_ptr + part, mask=splits < num_splits, other=float("-inf"))
    m = tl.max(lse_parts, axis=0)
    m_safe = tl.where(m == float("-inf"), 0.0, m)
    total = tl.sum(tl.exp2(lse_parts - m_safe), axis=0)
    seen = total > 0
    lse2 = tl.where(seen, m_safe + tl.log2(tl.where(seen, total, 1.0)), float("-inf"))
    lse2_safe = tl.where(seen, lse2, 0.0)
    acc = tl.zeros([512], tl.float32)
    for i in range(0, num_splits):
        p = (i_b * num_splits + i).to(tl.int64) * n_rows + row
        w = tl.exp2(tl.load(lse_part_ptr + p) - lse2_safe)  # 0 for an empty split
        acc += w * tl.load(o_part_ptr + p * 512 + tl.arange(0, 512))
    tl.store(out_ptr + (i_b * n_rows + row).to(tl.int64) * 512 + tl.arange(0, 512),
             acc.to(out_ptr.dtype.element_ty))
    i_s, i_h = row // h_q, row % h_q
    tl.store(lse_ptr + (i_b * h_q + i_h) * s_q + i_s, lse2 / 1.4426950408889634)


# ---------------------------------------------------------------------------------------
# Host side: checks, configuration, launch
# ---------------------------------------------------------------------------------------

_SM_COUNT = {}


def _sm_count(device) -> int:
    if device.type != "cuda":
        return 132  # the interpreter has no SMs; an H100/H200's count keeps the heuristic testable
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _SM_COUNT:
        _SM_COUNT[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _SM_COUNT[idx]


def default_block_m(s_q: int, h_q: int) -> int:
    """Query rows per program: all s_q*h_q rows up to 64 (tl.dot needs at least 16)."""
    return max(16, min(64, triton.next_power_of_2(s_q * h_q)))


def default_launch(block_m: int, is_fp8: bool = False):
    """(BLOCK_N, num_warps, num_stages) shipped for a BLOCK_M on a GPU.

    Chosen from sm_90 compiles (python -m kernels.compile_report), not from timings --
    no GPU run has tuned them yet. Registers are the limit: the fp32 accumulator
    [BLOCK_M, 512] alone is 128 registers per thread at BLOCK_M=64 over 8 warps. A wider
    KV tile (BLOCK_N=32) halves how often that accumulator is rescaled per key, and costs
    about 100 bytes of spills at BLOCK_M=64; FP8 tiles, dequantized in registers, stay at
    16 rows below BLOCK_M=64. BLOCK_M=64 is the first size whose dots compile to Hopper's
    wgmma (smaller ones use mma.sync). num_stages=2: the next KV tile's cp.async copy
    overlaps this tile's math."""
    if block_m <= 32:
        return (16 if is_fp8 else 32), (4 if block_m <= 16 else 8), 2
    return 32, 8, 2


def default_num_splits(b: int, s_q: int, h_q: int, max_seqlen_bound: int, num_sms: int,
                       block_m: int | None = None, block_n: int = 64, min_tiles_per_split: int = 4) -> int:
    """How many pieces to cut each sequence's keys into.

    Aim for about two programs per SM over the whole grid (b * row blocks * splits),
    but keep at least min_tiles_per_split KV tiles per split, so that a split's
    fixed cost (loading q, writing a 512-wide partial row) stays small next to its
    loop. max_seqlen_bound is an upper bound on the longest sequence (the host uses
    block_table width * page size, which needs no device sync)."""
    block_m = block_m or default_block_m(s_q, h_q)
    programs = b * triton.cdiv(s_q * h_q, block_m)
    want = triton.cdiv(2 * num_sms, programs)
    most = max(1, triton.cdiv(max_seqlen_bound, block_n * min_tiles_per_split))
    return int(max(1, min(want, most, 64)))


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
    if page < 16 or page > 256 or page & (page - 1):
        raise ValueError(f"page_block_size must be a power of two in 16..256, got {page}")
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
    return b, s_q, h_q, page


def mla_decode_with_kvcache(q, kv_cache, block_table, cache_seqlens, head_dim_v=D_LATENT, softmax_scale=None,
                            causal=False, is_fp8_kvcache=False, **options):
    """Paged MLA decode, FlashMLA's calling convention. Returns (out, lse).

    options:
      version      "naive" | "tiled" | "splitkv" (default)
      num_splits   split-KV pieces per sequence (splitkv; default: default_num_splits)
      block_m, block_n, num_warps, num_stages   tile shape and launch overrides
    Not checked (it would need a device sync): cache_seqlens[i] <= max_blocks * page_block_size.
    """
    version = options.pop("version", "splitkv")
    if version not in VERSIONS:
        raise ValueError(f"version must be one of {VERSIONS}, got {version!r}")
    b, s_q, h_q, page = _check(q, kv_cache, block_table, cache_seqlens, head_dim_v, is_fp8_kvcache)
    scale = softmax_scale if softmax_scale is not None else D_K ** -0.5
    qk_scale_log2 = float(scale) * LOG2E
    interp = _interpreting()
    # The interpreter runs bf16 dots on raw bit patterns: compute in fp32 there only.
    dtype = tl.float32 if interp else (tl.bfloat16 if q.dtype == torch.bfloat16 else tl.float16)
    n_rows = s_q * h_q
    out = torch.empty(b, s_q, h_q, D_LATENT, dtype=q.dtype, device=q.device)
    lse = torch.empty(b, h_q, s_q, dtype=torch.float32, device=q.device)
    stride_row = kv_cache.stride(1)  # elements (or bytes for FP8) from one token's row to the next
    common = dict(PAGE=page, CAUSAL=bool(causal), IS_FP8=bool(is_fp8_kvcache))
    if b == 0:
        return out, lse
    if version == "naive":
        block_n = options.pop("block_n", 16)
        _check_tile("block_n", block_n)
        launch = dict(num_warps=options.pop("num_warps", 4))
        _no_more_options(options, version)
        _naive_kernel[(b, n_rows)](q, kv_cache, block_table, cache_seqlens, out, lse,
                                   h_q, s_q, block_table.stride(0), stride_row, qk_scale_log2,
                                   BLOCK_N=block_n, **common, **launch)
        return out, lse
    block_m = options.pop("block_m", default_block_m(s_q, h_q))
    d_bn, d_warps, d_stages = default_launch(block_m, is_fp8_kvcache)
    block_n = options.pop("block_n", 64 if interp else d_bn)  # wide tiles: fewer interpreted steps
    _check_tile("block_m", block_m)
    _check_tile("block_n", block_n)
    launch = dict(num_warps=options.pop("num_warps", d_warps), num_stages=options.pop("num_stages", d_stages))
    grid_m = triton.cdiv(n_rows, block_m)
    if version == "tiled":
        _no_more_options(options, version)
        _tiled_kernel[(b, grid_m)](q, kv_cache, block_table, cache_seqlens, out, lse,
                                   h_q, s_q, block_table.stride(0), stride_row, qk_scale_log2,
                                   BLOCK_M=block_m, BLOCK_N=block_n, DTYPE=dtype,
                                   KV_STAGES=launch["num_stages"], **common, **launch)
        return out, lse
    num_splits = options.pop("num_splits", None)
    _no_more_options(options, version)
    if num_splits is None:
        num_splits = default_num_splits(b, s_q, h_q, block_table.shape[1] * page, _sm_count(q.device),
                                        block_m, block_n)
    if num_splits < 1:
        raise ValueError(f"num_splits must be >= 1, got {num_splits}")
    o_part = torch.empty(b, num_splits, n_rows, D_LATENT, dtype=torch.float32, device=q.device)
    lse_part = torch.empty(b, num_splits, n_rows, dtype=torch.float32, device=q.device)
    _splitkv_kernel[(b, grid_m, num_splits)](q, kv_cache, block_table, cache_seqlens, o_part, lse_part,
                                             h_q, s_q, block_table.stride(0), stride_row, qk_scale_log2,
                                             num_splits, BLOCK_M=block_m, BLOCK_N=block_n, DTYPE=dtype,
                                             KV_STAGES=launch["num_stages"], **common, **launch)
    _combine_kernel[(b, n_rows)](o_part, lse_part, out, lse, h_q, s_q, num_splits,
                                 SPLITS_P2=triton.next_power_of_2(num_splits), num_warps=4)
    return out, lse


def _check_tile(name, value):
    if value < 16 or value & (value - 1):
        raise ValueError(f"{name} must be a power of two >= 16 (tl.dot's smallest tile), got {value}")


def _no_more_options(options, version):
    if options:
        raise TypeError(f"unknown option(s) for version {version!r}: {sorted(options)}")
