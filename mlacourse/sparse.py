"""DeepSeek Sparse Attention (DeepSeek-V3.2) in plain numpy: the lightning indexer and its
top-k, FlashMLA's sparse addressing, the sparse absorbed decode over 656-byte FP8 rows, and
the arithmetic of a sparse decode step (chapter 8).

The mechanism, per new token t of one sequence:
  1. the lightning indexer scores every earlier token s:
        I[t, s] = sum_j w[t, j] * ReLU(q_idx[t, j] . k_idx[s])      (j = 1 .. 64 index heads)
     with q_idx [64, 128] and w [64] computed from token t, and one shared key k_idx [128]
     cached per token (FP8: 128 e4m3 values + one float32 scale = 132 bytes);
  2. the 2048 highest-scoring positions are kept (fewer when fewer tokens exist);
  3. MLA runs in its absorbed (MQA) form over those 2048 cache rows only:
     q [h_q, 576] against K = rows [2048, 576], V = rows[:, :512].

FlashMLA's sparse decode kernel has no block table: the caller turns each logical position
into a physical row number, page_block * page_block_size + offset, and marks an empty slot
with -1 (and only -1: the kernel does no bounds check).

Shapes follow FlashMLA: q [b, s_q, h_q, 576], kv_cache uint8 [num_blocks, page_block_size,
1, 656], indices [b, s_q, topk], out [b, s_q, h_q, 512], lse [b, h_q, s_q] (natural log; -inf
for a query row with no valid index, whose out is 0 -- FlashMLA returns +inf there).

Cost conventions as in flops.py: a multiply-add is 2 FLOPs; bytes are what crosses device
memory once. The step-time model is a roofline, max(FLOPs / peak, bytes / bandwidth) per
kernel, with the peaks of hardware.GPUS: a model, not a measurement."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import flops
from .attention import attention_from_scores
from .cache import fp8_mla_row_bytes
from .config import DEEPSEEK_V3
from .fp8 import TILE as FP8_TILE
from .fp8 import unpack_fp8_row
from .hardware import GPU, get


@dataclass(frozen=True)
class DSAConfig:
    """The lightning indexer's shapes. Source: DeepSeek-V3.2-Exp, inference/config_671B_v3.2.json
    ("index_n_heads": 64, "index_head_dim": 128, "index_topk": 2048) and inference/model.py
    (the first qk_rope_head_dim = 64 of the 128 dims carry RoPE; keys cached as float8 e4m3
    with one float32 scale per block_size = 128 values)."""
    name: str
    index_n_heads: int
    index_head_dim: int
    index_topk: int
    index_rope_dim: int
    index_quant_block: int

    @property
    def index_key_bytes(self) -> int:
        """Bytes cached per token per layer for the indexer: e4m3 codes + float32 scales (132)."""
        return self.index_head_dim + 4 * (self.index_head_dim // self.index_quant_block)


DSA_V32 = DSAConfig("DeepSeek-V3.2", index_n_heads=64, index_head_dim=128, index_topk=2048,
                    index_rope_dim=64, index_quant_block=128)

D_LATENT, D_ROPE = DEEPSEEK_V3.d_latent, DEEPSEEK_V3.d_rope  # 512, 64 (V3.2 keeps V3's MLA shapes)
FP8_ROW_BYTES = fp8_mla_row_bytes(D_LATENT, D_ROPE)  # 656: 512 e4m3 + 4 float32 scales + 64 bf16 rope


# ---------------------------------------------------------------------------------------
# The lightning indexer and its top-k
# ---------------------------------------------------------------------------------------

def index_scores(q_idx, weights, k_idx) -> np.ndarray:
    """Index scores I[t, s] = sum_j weights[t, j] * ReLU(q_idx[t, j] . k_idx[s]).

    q_idx [T, H, D] (one query token per row t, H index heads), weights [T, H],
    k_idx [S, D] (one key per cached token, shared by the heads) -> float64 [T, S].
    (DeepSeek folds the softmax scale 1/sqrt(D), 1/sqrt(H) and the FP8 scales into
    `weights`; here the weights are whatever is passed.)"""
    q = np.asarray(q_idx, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    k = np.asarray(k_idx, dtype=np.float64)
    if q.ndim != 3 or w.shape != q.shape[:2] or k.ndim != 2 or k.shape[1] != q.shape[2]:
        raise ValueError(f"index_scores wants q_idx [T, H, D], weights [T, H], k_idx [S, D]; got "
                         f"{q.shape}, {w.shape}, {k.shape}")
    logits = np.einsum("thd,sd->ths", q, k)  # [T, H, S]
    return np.einsum("th,ths->ts", w, np.maximum(logits, 0.0))  # [T, S]


def index_topk(scores, topk: int, n_visible=None) -> np.ndarray:
    """The top-k positions of each row of scores [T, S] -> int64 [T, topk].

    Row t may choose among positions 0 .. n_visible[t] - 1 (all S when n_visible is None).
    The tie rule: positions are ordered by score, highest first, and equal scores by
    position, smaller first; the first topk of that order are returned in that order. When
    fewer than topk positions are visible the row is padded with -1 at the end.
    In a decode step the s_q new tokens are the last of the S keys and each sees itself
    and what came before it: n_visible = attention.causal_mask(s_q, S).sum(axis=1)."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"scores must be [T, S], got shape {s.shape}")
    if not isinstance(topk, (int, np.integer)) or topk < 1:
        raise ValueError(f"topk must be an integer >= 1, got {topk!r}")
    n_t, n_s = s.shape
    vis = np.full(n_t, n_s, dtype=np.int64) if n_visible is None else np.asarray(n_visible, dtype=np.int64)
    if vis.shape != (n_t,) or np.any(vis < 0) or np.any(vis > n_s):
        raise ValueError(f"n_visible must be [T={n_t}] with values in 0..{n_s}, got {np.asarray(n_visible)!r}")
    out = np.full((n_t, topk), -1, dtype=np.int64)
    for t in range(n_t):
        row = s[t, :vis[t]]
        if np.isnan(row).any():
            raise ValueError(f"scores row {t} holds NaN among its visible positions")
        order = np.lexsort((np.arange(vis[t]), -row))  # by -score, then by position
        keep = order[:topk]
        out[t, :len(keep)] = keep
    return out


def hadamard(n: int) -> np.ndarray:
    """The orthonormal Hadamard matrix [n, n] (n a power of two), Sylvester's construction
    scaled by n**-0.5: what DeepSeek-V3.2's indexer applies to its queries and keys before
    quantizing them (`rotate_activation`, a fast Walsh-Hadamard transform with
    scale = n**-0.5). Orthonormal, so (H q) . (H k) = q . k: the scores do not change, but a
    vector's largest entry is spread over all n, which suits one shared FP8 scale per 128."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"n must be a power of two >= 1, got {n}")
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h / np.sqrt(n)


# ---------------------------------------------------------------------------------------
# FlashMLA's sparse addressing
# ---------------------------------------------------------------------------------------

def physical_indices(topk_pos, block_table, page_block_size: int) -> np.ndarray:
    """Logical top-k positions -> FlashMLA's `indices_in_kvcache`.

    topk_pos [b, s_q, topk] integer token positions of each sequence (-1: no token),
    block_table [b, max_blocks] page ids -> int64 [b, s_q, topk] with
        indices[i, j, k] = block_table[i, t // P] * P + t % P,   t = topk_pos[i, j, k],
    and -1 kept as -1 (the one marker the decode kernel skips). A position below -1 or at
    or past max_blocks * P is a ValueError: no table entry holds it."""
    pos = np.asarray(topk_pos)
    table = np.asarray(block_table)
    if pos.ndim != 3 or table.ndim != 2 or table.shape[0] != pos.shape[0]:
        raise ValueError(f"physical_indices wants topk_pos [b, s_q, topk] and block_table [b, max_blocks] "
                         f"with the same b; got {pos.shape} and {table.shape}")
    if pos.dtype.kind not in "iu" or table.dtype.kind not in "iu":
        raise TypeError(f"topk_pos and block_table must be integer arrays, got {pos.dtype} and {table.dtype}")
    if not isinstance(page_block_size, (int, np.integer)) or page_block_size < 1:
        raise ValueError(f"page_block_size must be an integer >= 1, got {page_block_size!r}")
    p = int(page_block_size)
    pos = pos.astype(np.int64)
    limit = table.shape[1] * p
    bad = (pos < -1) | (pos >= limit)
    if bad.any():
        i = tuple(int(x) for x in np.argwhere(bad)[0])
        raise ValueError(f"topk_pos{list(i)} = {int(pos[i])} is neither -1 nor a position 0..{limit - 1} "
                         f"that the block table ({table.shape[1]} pages of {p}) covers")
    valid = pos >= 0
    safe = np.where(valid, pos, 0)  # [b, s_q, topk]; -1 reads page 0 and is then put back
    rows = np.arange(pos.shape[0])[:, None, None]
    page = table.astype(np.int64)[rows, safe // p]  # [b, s_q, topk] page ids
    return np.where(valid, page * p + safe % p, -1)


# ---------------------------------------------------------------------------------------
# Sparse absorbed decode over FP8 rows
# ---------------------------------------------------------------------------------------

def sparse_decode(q, kv_cache, indices, softmax_scale: float, d_rope: int = D_ROPE):
    """Top-k sparse MLA decode in float64, FlashMLA's sparse calling convention.

    q          [b, s_q, h_q, d_k] absorbed queries (d_k = d_latent + d_rope; 576 in V3.2)
    kv_cache   uint8 [num_blocks, page_block_size, 1, row_bytes]: FlashMLA's FP8 rows
               (656 bytes for d_latent 512: mlacourse.fp8's layout)
    indices    integer [b, s_q, topk]: physical rows (page * page_block_size + offset),
               -1 = no key. Every other entry counts as one key, duplicates included.
    Returns out [b, s_q, h_q, d_latent] (V = the dequantized latent of each row) and
    lse [b, h_q, s_q]; a query row whose indices are all -1 gets out 0 and lse -inf.
    Only the rows named by indices are read (poisoned rows elsewhere do not matter)."""
    q = np.asarray(q, dtype=np.float64)
    cache = np.asarray(kv_cache)
    idx = np.asarray(indices)
    if q.ndim != 4:
        raise ValueError(f"q must be [b, s_q, h_q, d_k], got shape {q.shape}")
    b, s_q, h_q, d_k = q.shape
    d_latent = d_k - d_rope
    row_bytes = d_latent + 4 * (d_latent // FP8_TILE) + 2 * d_rope
    if cache.dtype != np.uint8 or cache.ndim != 4 or cache.shape[2] != 1 or cache.shape[3] != row_bytes:
        raise ValueError(f"kv_cache must be uint8 [num_blocks, page_block_size, 1, {row_bytes}], got "
                         f"{cache.dtype} {cache.shape}")
    if idx.dtype.kind not in "iu" or idx.ndim != 3 or idx.shape[:2] != (b, s_q):
        raise ValueError(f"indices must be integer [b={b}, s_q={s_q}, topk], got {idx.dtype} {idx.shape}")
    n_rows = cache.shape[0] * cache.shape[1]
    idx = idx.astype(np.int64)
    bad = (idx < -1) | (idx >= n_rows)
    if bad.any():
        i = tuple(int(x) for x in np.argwhere(bad)[0])
        raise ValueError(f"indices{list(i)} = {int(idx[i])} is neither -1 nor a row 0..{n_rows - 1} of the cache "
                         f"(on a GPU this is an illegal address: the kernel does not check)")
    flat = cache.reshape(n_rows, row_bytes)  # row r = page r // P, slot r % P
    out = np.zeros((b, s_q, h_q, d_latent))
    lse = np.full((b, h_q, s_q), -np.inf)
    for i in range(b):
        for j in range(s_q):
            keys = idx[i, j][idx[i, j] >= 0]  # [n] the valid entries, in order, duplicates kept
            if keys.size == 0:
                continue
            kv = unpack_fp8_row(flat[keys], d_latent, d_rope)  # [n, d_k] float64
            scores = softmax_scale * (q[i, j] @ kv.T)  # [h_q, n]
            o, l = attention_from_scores(scores, kv[:, :d_latent])
            out[i, j], lse[i, :, j] = o, l
    return out, lse


def attn_sink_scale(lse, attn_sink) -> np.ndarray:
    """FlashMLA's attn_sink (flash_mla_with_kvcache, flash_mla_sparse_fwd at 9241ae3): the
    output of head h is multiplied by exp(lse) / (exp(lse) + exp(attn_sink[h])); lse itself
    is returned unchanged. That is softmax attention with one more logit, attn_sink[h], whose
    value vector is zero: the sink takes probability mass and gives nothing back. -inf: no
    effect; +inf: the output becomes 0. lse [..., h_q] natural log, attn_sink [h_q].
    Computed as 1 / (1 + exp(sink - lse)), which neither overflows nor loses a -inf lse."""
    lse = np.asarray(lse, dtype=np.float64)
    sink = np.asarray(attn_sink, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        d = sink - lse
        d = np.where(np.isposinf(sink), np.inf, np.where(np.isneginf(sink), -np.inf, d))
        return 1.0 / (1.0 + np.exp(d))


POISON_BYTE = 0xFF  # 0xFF is a NaN e4m3 code, 0xFFFFFFFF a NaN float32 scale, 0xFFFF a NaN bf16


def random_fp8_cache(rng: np.random.Generator, num_blocks: int, page_block_size: int, used_rows,
                     magnitude=(1e-2, 1e1), poison: bool = True, scales: str = "pow2") -> np.ndarray:
    """A test cache uint8 [num_blocks, page_block_size, 1, 656]: the rows in `used_rows`
    (physical numbers) hold packed random latents and rope values, each row's size drawn
    log-uniformly from `magnitude`, quantized with mlacourse.fp8's scale rule `scales`
    ("pow2", FlashMLA's, or "amax"); every other byte is POISON_BYTE, so a row that should not
    be read dequantizes to NaN and spoils any result it enters."""
    from .fp8 import pack_fp8_row
    n_rows = num_blocks * page_block_size
    used = np.unique(np.asarray(used_rows, dtype=np.int64))
    if used.size and (used[0] < 0 or used[-1] >= n_rows):
        raise ValueError(f"used_rows must lie in 0..{n_rows - 1}")
    flat = np.full((n_rows, FP8_ROW_BYTES), POISON_BYTE if poison else 0, dtype=np.uint8)
    size = 10.0 ** rng.uniform(np.log10(magnitude[0]), np.log10(magnitude[1]), size=(used.size, 1))
    latent = rng.standard_normal((used.size, D_LATENT)) * size
    rope = rng.standard_normal((used.size, D_ROPE)) * size
    flat[used] = pack_fp8_row(latent, rope, scales)
    return flat.reshape(num_blocks, page_block_size, 1, FP8_ROW_BYTES)


# ---------------------------------------------------------------------------------------
# The arithmetic of a sparse decode step
# ---------------------------------------------------------------------------------------

def sparse_attention_flops(h_q: int, s_q: int, topk: int, d_k: int = D_LATENT + D_ROPE,
                           d_v: int = D_LATENT) -> int:
    """QK^T and PV of one sequence's s_q query tokens over topk keys each:
    2 * h_q * s_q * topk * (d_k + d_v) (flops.decode_flops with s_k = topk; -1 entries are
    counted, as FlashMLA's benchmark counts them)."""
    return flops.decode_flops(h_q, s_q, topk, d_k, d_v)


def sparse_attention_bytes(h_q: int, s_q: int, rows_read: int, d_k: int = D_LATENT + D_ROPE,
                           d_v: int = D_LATENT, row_bytes: int = FP8_ROW_BYTES) -> int:
    """q (bf16) + the distinct cache rows read + out (bf16) for one sequence.
    rows_read: distinct rows gathered -- topk for s_q = 1; between topk and s_q * topk when
    s_q > 1 (the query tokens of one sequence pick overlapping sets; FlashMLA's benchmark
    counts the union)."""
    return flops.decode_bytes(h_q, s_q, rows_read, d_k, d_v, kv_row_bytes=row_bytes)


def indexer_flops(s_k: int, s_q: int = 1, cfg: DSAConfig = DSA_V32) -> int:
    """The indexer of one sequence: every query token against every cached key, all heads:
    s_q * s_k * (2 * H * D  [q . k per head]  +  2 * H  [the weighted sum]); ReLU not counted."""
    h, d = cfg.index_n_heads, cfg.index_head_dim
    return s_q * s_k * (2 * h * d + 2 * h)


def indexer_bytes(s_k: int, s_q: int = 1, cfg: DSAConfig = DSA_V32, logits_round_trip: bool = True) -> int:
    """Bytes the indexer of one sequence moves: the keys (132 bytes per cached token, read
    once for all s_q query tokens), the FP8 queries and float32 weights of the s_q tokens,
    the float32 logits [s_q, s_k] written and read back by a separate top-k pass (drop them
    with logits_round_trip=False for a fused top-k), and the int32 top-k indices written."""
    h, d = cfg.index_n_heads, cfg.index_head_dim
    keys = s_k * cfg.index_key_bytes
    queries = s_q * (h * d + 4 * h)  # e4m3 q plus the float32 head weights
    logits = 2 * 4 * s_q * s_k if logits_round_trip else 0
    return keys + queries + logits + 4 * s_q * cfg.index_topk


def roofline_seconds(n_flops: float, n_bytes: float, gpu: GPU | str, precision: str = "bf16",
                     tflops: float | None = None) -> float:
    """The roofline's lower bound on a kernel's time: max(FLOPs / peak, bytes / bandwidth).
    tflops: a rate the kernel reaches (a published measurement) in place of the peak."""
    g = get(gpu) if isinstance(gpu, str) else gpu
    rate = g.peak_tflops(precision) if tflops is None else tflops
    if not rate > 0:
        raise ValueError(f"tflops must be > 0, got {tflops!r}")
    return max(n_flops / (rate * 1e12), n_bytes / (g.hbm_gbps * 1e9))


def dense_step_seconds(s_k: int, gpu: GPU | str, h_q: int = 128, s_q: int = 1,
                       row_bytes: int = FP8_ROW_BYTES, tflops: float | None = None) -> float:
    """Dense absorbed decode of one sequence over all s_k rows (same FP8 row format), on the
    roofline: bf16 tensor-core peak (or `tflops`), every row read once."""
    f = flops.decode_flops(h_q, s_q, s_k, D_LATENT + D_ROPE, D_LATENT)
    by = flops.decode_bytes(h_q, s_q, s_k, D_LATENT + D_ROPE, D_LATENT, kv_row_bytes=row_bytes)
    return roofline_seconds(f, by, gpu, "bf16", tflops)


def sparse_step_seconds(s_k: int, gpu: GPU | str, h_q: int = 128, s_q: int = 1, cfg: DSAConfig = DSA_V32,
                        row_bytes: int = FP8_ROW_BYTES, logits_round_trip: bool = True, indexer: bool = True,
                        tflops: float | None = None) -> dict:
    """Sparse decode of one sequence on the roofline: the indexer (an FP8 kernel over all s_k
    keys) plus the sparse attention over min(s_k, topk) rows per query token (bf16 MMAs after
    dequantization, at the bf16 peak or `tflops`; rows_read = s_q * min(s_k, topk), no
    overlap assumed). indexer=False leaves the indexer out: the attention kernel alone, which
    is what a kernel benchmark times. Returns {"indexer": s, "attention": s, "total": s}."""
    k = min(s_k, cfg.index_topk)
    t_idx = roofline_seconds(indexer_flops(s_k, s_q, cfg), indexer_bytes(s_k, s_q, cfg, logits_round_trip),
                             gpu, "fp8") if indexer else 0.0
    t_att = roofline_seconds(sparse_attention_flops(h_q, s_q, k),
                             sparse_attention_bytes(h_q, s_q, s_q * k, row_bytes=row_bytes), gpu, "bf16", tflops)
    return {"indexer": t_idx, "attention": t_att, "total": t_idx + t_att}


def sparse_break_even(gpu: GPU | str, h_q: int = 128, s_q: int = 1, cfg: DSAConfig = DSA_V32,
                      row_bytes: int = FP8_ROW_BYTES, logits_round_trip: bool = True, indexer: bool = True,
                      dense_tflops: float | None = None, sparse_tflops: float | None = None,
                      s_max: int = 1 << 24) -> int:
    """The dense/sparse break-even: the smallest context s_k at which a sparse step (the
    indexer, unless indexer=False, + the top-k attention) is faster than dense decode over
    all s_k rows, on the roofline model (peaks, or the rates dense_tflops / sparse_tflops a
    kernel is measured to reach). Up to topk the sparse attention does the dense step's
    work, so sparse can only win beyond topk; past it the dense time grows faster than the
    indexer's and the difference only grows. (Not FlashMLA's "crossover", which is its
    sparse kernel's exchange of dequantized rows between two CTAs: dequant_cycles_per_token.)"""
    def sparse_wins(s):
        sparse = sparse_step_seconds(s, gpu, h_q, s_q, cfg, row_bytes, logits_round_trip, indexer, sparse_tflops)
        return sparse["total"] < dense_step_seconds(s, gpu, h_q, s_q, row_bytes, dense_tflops)
    lo, hi = cfg.index_topk, cfg.index_topk
    if sparse_wins(lo):
        raise ValueError(f"sparse already wins at s_k = topk = {lo}: a faster sparse than dense kernel per key "
                         f"(sparse_tflops {sparse_tflops} > dense_tflops {dense_tflops}?)")
    while not sparse_wins(hi):
        hi *= 2
        if hi > s_max:
            raise ValueError(f"sparse never beats dense below s_k = {s_max} on this model")
    while hi - lo > 1:  # invariant: sparse loses at lo, wins at hi
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if sparse_wins(mid) else (mid, hi)
    return hi


def published_equal_time_context(topk: int = 2048, dense_tflops: float = 640.0, sparse_tflops: float = 410.0) -> float:
    """Where a compute-bound sparse kernel running at sparse_tflops over topk keys takes as long
    as a dense one at dense_tflops over s_k keys (same FLOPs per key):
    s_k = topk * dense_tflops / sparse_tflops. With FlashMLA's published H800 figures (640 for
    the bf16 dense kernel, 410 for the FP8 sparse kernel at topk 2048) about 3,200; FlashMLA's
    deep-dive says the two take comparable time "when the sequence length is around 3000".
    Kernel against kernel: no indexer (sparse_break_even(..., indexer=False) at equal rates)."""
    return topk * dense_tflops / sparse_tflops


# ---------------------------------------------------------------------------------------
# FlashMLA's cycle arithmetic for its FP8 sparse decode kernel on an H800 (its deep-dive
# blog, docs/20250929-hopper-fp8-sparse-deep-dive.md): why dequantization bounds the
# kernel, and how the two-CTA "crossover" through distributed shared memory lifts it
# ---------------------------------------------------------------------------------------

MMA_FLOP_PER_CLOCK_SM = 4096  # 989 TFLOPS / 1,830 MHz / 132 SMs (the blog's figure, bf16 dense)
# CUDA-core clocks per latent value to dequantize it, the four terms of the blog's sum
# (e4m3 -> half, half -> float32, float32 -> bf16, times the scale; per NVIDIA's table of
# arithmetic-instruction throughput): (1/64 + 1/64 + 1/16 + 1/256) clocks per value
DEQUANT_CLOCKS_PER_VALUE = (1 / 64, 1 / 64, 1 / 16, 1 / 256)


def mma_cycles_per_token(heads_per_cta: int = 64, d_k: int = D_LATENT + D_ROPE, d_v: int = D_LATENT) -> float:
    """Tensor-core clocks one CTA spends per cached token: QK^T and PV for its heads,
    2 * heads * (d_k + d_v) FLOPs at 4,096 FLOP per clock per SM (34 at 64 heads)."""
    return 2 * heads_per_cta * (d_k + d_v) / MMA_FLOP_PER_CLOCK_SM


def dequant_cycles_per_token(d_latent: int = D_LATENT, ctas_sharing: int = 1) -> float:
    """CUDA-core clocks one CTA spends dequantizing a token's latent (50 for 512 values).
    ctas_sharing: CTAs of a cluster that split the tokens and exchange the dequantized rows
    through distributed shared memory (FlashMLA's "crossover": 2, each dequantizes half)."""
    if ctas_sharing < 1:
        raise ValueError(f"ctas_sharing must be >= 1, got {ctas_sharing}")
    return sum(DEQUANT_CLOCKS_PER_VALUE) * d_latent / ctas_sharing


def tensor_busy_ceiling(heads_per_cta: int = 64, ctas_sharing: int = 1) -> float:
    """The most of its time a CTA's tensor cores can be busy when dequantization and MMAs
    overlap perfectly: mma / max(mma, dequant) -- 0.68 without the crossover, 1 with it.
    A ceiling from clock counts, not a prediction: latency, the prologue and epilogue of
    a 2,048-key loop and the CTA exchange itself are left out."""
    mma = mma_cycles_per_token(heads_per_cta)
    return mma / max(mma, dequant_cycles_per_token(ctas_sharing=ctas_sharing))


# ---------------------------------------------------------------------------------------
# Sparse prefill runs absorbed: the (query, key) pair when queries choose different keys
# ---------------------------------------------------------------------------------------

def pair_intensity(path: str, n_heads: int = DEEPSEEK_V3.n_heads, row_bytes: int = 2 * (D_LATENT + D_ROPE)) -> float:
    """FLOP per byte of one (query token, key) pair of top-k attention when no other query
    token shares the gathered key (each chooses its own 2,048): every byte fetched for the
    pair serves only this query token's heads.
      absorb: one latent row (row_bytes: bf16 1,152; FP8 656) feeds all n_heads heads:
              flops.absorb_flops_per_pair / row_bytes   (242 in bf16: MQA)
      expand: each head reads its own K [192] and V [128] of that key, bf16:
              flops.expand_flops_per_pair / (2 * n_heads * (192 + 128)) = 1   (MHA)
    In dense prefill a tile of keys serves a tile of consecutive queries, which all attend to
    it, and MHA's intensity grows with the query tile; with top-k selection it cannot."""
    c = DEEPSEEK_V3
    if path == "absorb":
        return flops.absorb_flops_per_pair(n_heads, c.d_rope, c.d_latent) / row_bytes
    if path == "expand":
        return flops.expand_flops_per_pair(n_heads, c.d_nope, c.d_rope, c.d_v) / (2 * n_heads * (c.d_qk + c.d_v))
    raise ValueError(f"path must be 'absorb' or 'expand', got {path!r}")


# ---------------------------------------------------------------------------------------
# Random gathers against contiguous pages
# ---------------------------------------------------------------------------------------

def sectors_read(rows, row_bytes: int = FP8_ROW_BYTES, sector: int = 32) -> int:
    """Distinct `sector`-byte memory sectors touched when reading cache rows `rows` (row r
    occupies bytes r*row_bytes .. (r+1)*row_bytes - 1 of a contiguous cache; paged or not,
    FlashMLA's physical index puts it there). The bytes that cross the bus are this times
    `sector`: a gather pays for the partial sectors at both ends of every row it reads alone."""
    r = np.unique(np.asarray(rows, dtype=np.int64))
    if r.size and r[0] < 0:
        raise ValueError("rows must be >= 0 (drop the -1 entries first)")
    first = r * row_bytes // sector  # [n] first sector of each row
    last = ((r + 1) * row_bytes - 1) // sector  # [n] last sector
    # union of the intervals [first, last]: rows are sorted, so overlap only with the previous one
    total, prev_last = 0, -1
    for a, z in zip(first.tolist(), last.tolist()):
        a = max(a, prev_last + 1)
        if z >= a:
            total += z - a + 1
        prev_last = max(prev_last, z)
    return total


def gather_overhead(row_bytes: int = FP8_ROW_BYTES, sector: int = 32) -> float:
    """Bytes fetched per byte used when every row is read alone (a random top-k row), averaged
    over the starting offsets a row can have modulo `sector` (rows start at multiples of
    row_bytes; 656 = 16 * 41, so every 16-byte offset occurs): E[sectors * sector] / row_bytes."""
    offsets = [(r * row_bytes) % sector for r in range(sector // math.gcd(row_bytes, sector))]  # one period
    fetched = [((o + row_bytes - 1) // sector + 1) * sector for o in offsets]
    return float(np.mean(fetched)) / row_bytes
