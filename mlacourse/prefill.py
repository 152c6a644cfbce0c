"""MLA prefill in plain numpy: the expand path as one kernel sees it (ragged sequences, a 192-wide
QK and a 128-wide V, queries after a cached prefix), the tile schedule of causal attention, the
workspace of a chunked prefix, the absorbed sparse prefill, and the arithmetic that decides
between the two paths (chapter 9).

Shapes follow FlashAttention's varlen call (the one vLLM's MLA prefill makes):
  q             [total_q, H, d_qk]   new tokens' queries, d_qk = d_nope + d_rope = 192
  k             [total_k, H, d_qk]   keys, expanded: per-head k_nope | the shared k_rope
  v             [total_k, H, d_v]    values, expanded (d_v = 128)
  cu_seqlens_q  [b + 1]              sequence i's queries are rows cu_q[i] .. cu_q[i+1] - 1
  cu_seqlens_k  [b + 1]              its keys start at row cu_k[i]
  seqused_k     [b] or None          its keys are the first seqused_k[i] rows from there (FlashAttention
                                     3's seqused_k; None: cu_k[i+1] - cu_k[i]); rows after them unused
  out           [total_q, H, d_v],   lse [H, total_q] (natural log; FlashAttention's varlen layout)
Causal masking is bottom-right aligned (an extend): sequence i has n_q queries and n_k keys, and
query j sits at position n_k - n_q + j, so it sees keys 0 .. n_k - n_q + j. A query that sees no
key (n_q > n_k) gets out 0 and lse -inf, as every kernel of the course returns.

Cost conventions as in flops.py: a multiply-add is 2 FLOPs; bytes are what crosses device memory
once. Element sizes from cache.BYTES_PER_ELEMENT."""
from __future__ import annotations

import numpy as np

from . import flops
from .attention import attention, attention_from_scores
from .cache import BYTES_PER_ELEMENT, fp8_mla_row_bytes
from .config import DEEPSEEK_V3, MLAConfig


# ---------------------------------------------------------------------------------------
# The expand path's attention: ragged sequences, queries after a prefix
# ---------------------------------------------------------------------------------------

def visible_keys(n_q: int, n_k: int, causal: bool = True) -> np.ndarray:
    """How many keys each of n_q queries sees [n_q]: all n_k (not causal), or bottom-right
    aligned, n_k - n_q + 1 + j clipped to 0..n_k (query j at position n_k - n_q + j)."""
    if n_q < 0 or n_k < 0:
        raise ValueError(f"need n_q >= 0 and n_k >= 0, got n_q={n_q}, n_k={n_k}")
    if not causal:
        return np.full(n_q, n_k, dtype=np.int64)
    return np.clip(n_k - n_q + 1 + np.arange(n_q, dtype=np.int64), 0, n_k)


def _lengths(cu_seqlens, what: str) -> np.ndarray:
    cu = np.asarray(cu_seqlens, dtype=np.int64)
    if cu.ndim != 1 or cu.size < 1 or cu[0] != 0 or np.any(np.diff(cu) < 0):
        raise ValueError(f"{what} must be [b + 1], start at 0 and never decrease, got {cu.tolist()}")
    return np.diff(cu)


def prefill_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, scale: float, causal: bool = True,
                      seqused_k=None):
    """The expand path's attention over ragged sequences in float64 (module docstring).

    q [total_q, H, d_qk], k [total_k, H, d_qk], v [total_k, H, d_v] -> out [total_q, H, d_v],
    lse [H, total_q]. Reads only the rows each sequence uses: poisoned rows between or after
    the sequences (NaN) do not matter. Query rows after cu_seqlens_q[-1] belong to no sequence:
    out 0, lse -inf there."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    if q.ndim != 3 or k.ndim != 3 or v.ndim != 3 or k.shape[:2] != v.shape[:2] or q.shape[1:] != k.shape[1:] \
            or q.shape[1] != v.shape[1]:
        raise ValueError(f"want q [total_q, H, d_qk], k [total_k, H, d_qk], v [total_k, H, d_v]; got {q.shape}, "
                         f"{k.shape}, {v.shape}")
    n_q = _lengths(cu_seqlens_q, "cu_seqlens_q")
    room = _lengths(cu_seqlens_k, "cu_seqlens_k")
    if n_q.size != room.size:
        raise ValueError(f"cu_seqlens_q and cu_seqlens_k name {n_q.size} and {room.size} sequences")
    n_k = room if seqused_k is None else np.asarray(seqused_k, dtype=np.int64)
    if n_k.shape != room.shape or np.any(n_k < 0) or np.any(n_k > room):
        raise ValueError(f"seqused_k must be [b] with 0 <= seqused_k[i] <= cu_k[i+1] - cu_k[i], got {n_k.tolist()}")
    if np.asarray(cu_seqlens_q)[-1] > q.shape[0] or np.asarray(cu_seqlens_k)[-1] > k.shape[0]:
        raise ValueError("cu_seqlens point past the rows of q or k")
    total_q, h, _ = q.shape
    out = np.zeros((total_q, h, v.shape[2]))
    lse = np.full((h, total_q), -np.inf)
    q0s, k0s = np.asarray(cu_seqlens_q, dtype=np.int64), np.asarray(cu_seqlens_k, dtype=np.int64)
    for i in range(n_q.size):
        a, nq, c, nk = int(q0s[i]), int(n_q[i]), int(k0s[i]), int(n_k[i])
        if nq == 0:
            continue
        qi = q[a:a + nq].transpose(1, 0, 2)  # [H, n_q, d_qk]
        ki, vi = k[c:c + nk].transpose(1, 0, 2), v[c:c + nk].transpose(1, 0, 2)  # [H, n_k, d]
        mask = np.arange(nk)[None, :] < visible_keys(nq, nk, causal)[:, None]  # [n_q, n_k]
        o, l_ = attention(qi, ki, vi, scale, mask)  # [H, n_q, d_v], [H, n_q]
        out[a:a + nq] = o.transpose(1, 0, 2)
        lse[:, a:a + nq] = l_
    return out, lse


# ---------------------------------------------------------------------------------------
# The tile schedule of causal attention with a prefix offset (what version 2 visits)
# ---------------------------------------------------------------------------------------

SKIPPED, MASKED, FULL = 0, 1, 2  # a KV tile for a query block: never loaded, loaded and masked, loaded whole


def block_tile_ranges(m0: int, block_m: int, n_q: int, n_k: int, block_n: int, causal: bool = True):
    """(full_end, end): the KV tiles query block [m0, m0 + block_m) needs, as version 2 of the
    prefill kernel walks them -- tiles starting below full_end are visible to every query of the
    block (no mask), tiles from full_end up to `end` cross the diagonal or the end of the keys
    (masked), tiles from `end` on are above the diagonal (skipped: never loaded). Both are
    multiples of block_n, except `end` = n_k rounded up.
      first query m0 sees lo = n_k - n_q + 1 + m0 keys: full_end = block_n * floor(lo / block_n)
      last real query min(m0 + block_m, n_q) - 1 sees hi = n_k - n_q + min(m0 + block_m, n_q):
      end = block_n * ceil(hi / block_n) (clipped to the keys)."""
    if not 0 <= m0 < max(n_q, 1) or block_m < 1 or block_n < 1:
        raise ValueError(f"need 0 <= m0 < n_q and positive tiles, got m0={m0}, n_q={n_q}, {block_m}x{block_n}")
    if causal:
        lo = min(max(n_k - n_q + 1 + m0, 0), n_k)
        hi = min(max(n_k - n_q + min(m0 + block_m, n_q), 0), n_k)
    else:
        lo = hi = n_k
    full_end = (lo // block_n) * block_n
    end = -(-hi // block_n) * block_n
    return full_end, max(end, full_end)


def tile_classes(n_q: int, n_k: int, block_m: int, block_n: int, causal: bool = True) -> np.ndarray:
    """The picture of a causal prefill with a prefix offset: int [query blocks, KV tiles], each
    entry SKIPPED (0), MASKED (1) or FULL (2) as block_tile_ranges decides. Version 1 of the
    kernel loads every tile a block could see (all of them, each masked); version 2 loads the
    FULL ones without a mask, the MASKED ones with one, and never the SKIPPED ones."""
    if n_q < 0 or n_k < 0 or block_m < 1 or block_n < 1:
        raise ValueError(f"need n_q, n_k >= 0 and tiles of at least 1, got n_q={n_q}, n_k={n_k}, "
                         f"tiles {block_m}x{block_n}")
    m_blocks, n_tiles = -(-n_q // block_m), -(-n_k // block_n)
    out = np.zeros((m_blocks, n_tiles), dtype=np.int64)
    for mb in range(m_blocks):
        full_end, end = block_tile_ranges(mb * block_m, block_m, n_q, n_k, block_n, causal)
        out[mb, :full_end // block_n] = FULL
        out[mb, full_end // block_n:end // block_n] = MASKED
    return out


def tile_counts(n_q: int, n_k: int, block_m: int, block_n: int, causal: bool = True) -> dict:
    """Tiles loaded by each version for one head of one sequence: version 1 loads every tile
    for every query block; version 2 loads FULL + MASKED. 'useful' is the fraction of the
    (query, key) entries of version 2's loaded tiles that some real query sees."""
    c = tile_classes(n_q, n_k, block_m, block_n, causal)
    pairs = int(visible_keys(n_q, n_k, causal).sum())
    loaded = int((c > SKIPPED).sum())
    return {"query_blocks": c.shape[0], "kv_tiles": c.shape[1], "all": int(c.size), "full": int((c == FULL).sum()),
            "masked": int((c == MASKED).sum()), "skipped": int((c == SKIPPED).sum()), "loaded": loaded,
            "pairs": pairs, "useful": pairs / (loaded * block_m * block_n) if loaded else 0.0}


# ---------------------------------------------------------------------------------------
# FLOPs and bytes of one prefill, FlashAttention's way
# ---------------------------------------------------------------------------------------

def fa_flops(batch: int, n_heads: int, seqlen_q: int, seqlen_k: int, d_qk: int, d_v: int, causal: bool = True) -> float:
    """FLOPs as FlashAttention 3's benchmark counts a forward pass (hopper/benchmark_attn.py, `flops`):
    2 * batch * n_heads * seqlen_q * avg * (d_qk + d_v), where avg = seqlen_k, or under a causal
    mask avg = (max(0, seqlen_k - seqlen_q) + seqlen_k) / 2 -- the keys an average query sees,
    taken as a continuous average: for seqlen_q = seqlen_k = N it counts N^2 / 2 pairs where
    N (N + 1) / 2 are visible (prefill_pairs), 1/N fewer."""
    if min(batch, n_heads, seqlen_q, seqlen_k, d_qk, d_v) < 0:
        raise ValueError("every size must be >= 0")
    avg = (max(0, seqlen_k - seqlen_q) + seqlen_k) / 2 if causal else seqlen_k
    return batch * n_heads * 2 * seqlen_q * avg * (d_qk + d_v)


def prefill_pairs(n_q: int, n_k: int, causal: bool = True) -> int:
    """(query, key) pairs a prefill of n_q queries over n_k keys computes: sum of visible_keys
    (= flops.causal_pairs when 1 <= n_q <= n_k)."""
    return int(visible_keys(n_q, n_k, causal).sum())


def varlen_flops(seqlens_q, seqlens_k, n_heads: int, d_qk: int, d_v: int, causal: bool = True,
                 count: str = "fa") -> float:
    """FLOPs of a ragged batch: the sum over sequences of fa_flops (count="fa", how the
    benchmarks report TFLOPS) or of 2 * H * pairs * (d_qk + d_v) (count="exact")."""
    if count not in ("fa", "exact"):
        raise ValueError(f"count must be 'fa' or 'exact', got {count!r}")
    total = 0.0
    for nq, nk in zip(np.asarray(seqlens_q).tolist(), np.asarray(seqlens_k).tolist()):
        total += fa_flops(1, n_heads, nq, nk, d_qk, d_v, causal) if count == "fa" else \
            2 * n_heads * prefill_pairs(nq, nk, causal) * (d_qk + d_v)
    return total


def prefill_attention_bytes(n_q: int, n_k: int, n_heads: int, d_qk: int, d_v: int, dtype: str = "bf16") -> int:
    """Bytes the expand path's attention kernel moves at least once: q and k [*, H, d_qk], v [n_k, H,
    d_v], out [n_q, H, d_v] (lse left out: 4 bytes per row)."""
    e = BYTES_PER_ELEMENT[dtype]
    return e * n_heads * (n_q * d_qk + n_k * (d_qk + d_v) + n_q * d_v)


# ---------------------------------------------------------------------------------------
# The workspace: why engines expand a long prefix chunk by chunk
# ---------------------------------------------------------------------------------------

def expanded_kv_bytes(n_tokens: int, cfg: MLAConfig = DEEPSEEK_V3, dtype: str = "bf16") -> int:
    """Bytes of the per-head K [H, d_nope + d_rope] and V [H, d_v] of n_tokens tokens, one layer:
    what expanding them materializes (81,920 bytes per token at V3's shapes in bf16, 71x the
    1,152-byte bf16 latent row they come from)."""
    if n_tokens < 0:
        raise ValueError(f"n_tokens must be >= 0, got {n_tokens}")
    return n_tokens * cfg.n_heads * (cfg.d_qk + cfg.d_v) * BYTES_PER_ELEMENT[dtype]


def whole_prefix_expansion_bytes(n_prefix: int, cfg: MLAConfig = DEEPSEEK_V3, dtype: str = "bf16") -> int:
    """The workspace a prefill would need to expand a whole cached prefix of n_prefix tokens at
    once (one layer): expanded_kv_bytes(n_prefix). 10.7 GB at 128K tokens for V3 -- more than
    that sequence's whole bf16 latent cache over all 61 layers (9.2 GB)."""
    return expanded_kv_bytes(n_prefix, cfg, dtype)


def chunked_prefix_workspace(chunk_tokens: int, total_q: int, cfg: MLAConfig = DEEPSEEK_V3,
                             dtype: str = "bf16") -> dict:
    """The workspace of a chunked prefix (kernels/prefill_context.py allocates exactly this; its
    test compares): bytes per part and in total, whatever the prefix length.
      prefix K/V   expanded K and V of one chunk of prefix tokens: expanded_kv_bytes(chunk_tokens)
      new K/V      expanded K and V of the total_q new tokens (their causal part)
      partials     two float32 outputs [total_q, H, d_v] (the running merge and one chunk's) and
                   their two float32 lse [H, total_q]."""
    if chunk_tokens < 1 or total_q < 0:
        raise ValueError(f"need chunk_tokens >= 1 and total_q >= 0, got {chunk_tokens}, {total_q}")
    parts = {"prefix K/V": expanded_kv_bytes(chunk_tokens, cfg, dtype),
             "new K/V": expanded_kv_bytes(total_q, cfg, dtype),
             "partials": 2 * total_q * cfg.n_heads * (cfg.d_v + 1) * 4}
    return dict(parts, total=sum(parts.values()))


def context_chunks(b: int, longest_prefix: int, chunk_tokens: int, page_block_size: int) -> tuple[int, int]:
    """How the cached prefixes of a batch of b sequences are cut (kernels/prefill_context.py walks
    this plan): (per_sequence, iterations). Iteration j expands, for every sequence at once,
    prefix tokens j * per_sequence .. (j + 1) * per_sequence - 1 (those it has) into one
    workspace of chunk_tokens rows, sequence i's at rows i * per_sequence onwards:
    per_sequence = chunk_tokens // b rounded down to whole pages (at least one page, so
    chunk_tokens must give every sequence a page), iterations = ceil(longest_prefix /
    per_sequence) (0 without a prefix). vLLM cuts the same way: one budget of context tokens
    shared by the batch, each piece a whole number of pages."""
    if b < 1 or longest_prefix < 0 or page_block_size < 1:
        raise ValueError(f"need b >= 1, longest_prefix >= 0, page_block_size >= 1; got {b}, {longest_prefix}, "
                         f"{page_block_size}")
    per_seq = (chunk_tokens // b) // page_block_size * page_block_size
    if per_seq < page_block_size:
        raise ValueError(f"chunk_tokens={chunk_tokens} gives each of {b} sequences less than one page of "
                         f"{page_block_size} tokens: use at least {b * page_block_size}")
    return per_seq, -(-longest_prefix // per_seq)


def vllm_context_chunk_tokens(max_model_len: int, max_num_seqs: int, block_size: int, cap: int = 64 * 1024) -> int:
    """vLLM's MLA chunked-context budget in latent tokens (vllm/v1/attention/backends/mla/common.py,
    determine_chunked_prefill_workspace_size): min(max(8 * max_model_len, 4 * max_num_seqs *
    block_size), cap), with cap 64K tokens today (128K in its first versions). The latent
    workspace it allocates is this many 576-wide rows; the chunk it expands is as long."""
    return min(max(8 * max_model_len, 4 * max_num_seqs * block_size), cap)


# ---------------------------------------------------------------------------------------
# Absorbed sparse prefill (DeepSeek Sparse Attention: FlashMLA's MQA mode)
# ---------------------------------------------------------------------------------------

def sparse_prefill(q, kv, indices, scale: float, d_v: int = DEEPSEEK_V3.d_latent):
    """Top-k sparse prefill in float64, FlashMLA's flash_mla_sparse_fwd convention (absorbed: one
    shared 576-wide row per key, its first d_v = 512 numbers the value):

      q        [s_q, h_q, d_qk]      absorbed queries (d_qk = 576)
      kv       [s_kv, 1, d_qk]       rows (float; the kernel's bf16 rows as numbers)
      indices  [s_q, 1, topk] int    rows of kv each query attends to; a negative value (-1) or any
                                     value >= s_kv means "no key" (FlashMLA's rule); duplicates
                                     count twice
    -> out [s_q, h_q, d_v], lse [s_q, h_q] (natural log; -inf and out 0 for a query without a
    valid index -- FlashMLA returns +inf there). Only the rows named are read."""
    q = np.asarray(q, dtype=np.float64)
    kv = np.asarray(kv)
    idx = np.asarray(indices)
    if q.ndim != 3 or kv.ndim != 3 or kv.shape[1] != 1 or kv.shape[2] != q.shape[2]:
        raise ValueError(f"want q [s_q, h_q, d_qk] and kv [s_kv, 1, d_qk], got {q.shape} and {kv.shape}")
    if idx.ndim != 3 or idx.shape[:2] != (q.shape[0], 1) or idx.dtype.kind not in "iu":
        raise ValueError(f"indices must be integer [s_q={q.shape[0]}, 1, topk], got {idx.dtype} {idx.shape}")
    s_q, h_q, _ = q.shape
    out = np.zeros((s_q, h_q, d_v))
    lse = np.full((s_q, h_q), -np.inf)
    for t in range(s_q):
        keys = idx[t, 0][(idx[t, 0] >= 0) & (idx[t, 0] < kv.shape[0])]
        if keys.size == 0:
            continue
        rows = kv[keys, 0].astype(np.float64)  # [n, d_qk]
        o, l_ = attention_from_scores(scale * (q[t] @ rows.T), rows[:, :d_v])  # [h_q, d_v], [h_q]
        out[t], lse[t] = o, l_
    return out, lse


# ---------------------------------------------------------------------------------------
# Which path, for dense and for sparse prefill (FLOPs from flops.py, bytes here)
# ---------------------------------------------------------------------------------------

def bytes_per_selected_key(path: str, cfg: MLAConfig = DEEPSEEK_V3, kv_row_bytes: int | None = None) -> int:
    """Bytes a query token pulls per key it attends to when no other query token shares the
    fetch (a top-k gather): the expand path reads that key's per-head K and V, H * (d_qk + d_v)
    bf16 numbers (81,920 bytes at V3's shapes); the absorbed path reads its one latent row,
    kv_row_bytes (default FlashMLA's FP8 row, 656 bytes; 1,152 in bf16) -- 125x less."""
    if path == "expand":
        return expanded_kv_bytes(1, cfg)
    if path == "absorb":
        return kv_row_bytes if kv_row_bytes is not None else fp8_mla_row_bytes(cfg.d_latent, cfg.d_rope)
    raise ValueError(f"path must be 'expand' or 'absorb', got {path!r}")


def prefill_costs(n_new: int, n_ctx: int, cfg: MLAConfig = DEEPSEEK_V3, topk: int | None = None,
                  distinct="most", kv_row_bytes: int | None = None, reads: str = "pair") -> dict:
    """FLOPs and bytes of one layer's attention for one sequence's n_new new tokens (the last of
    n_ctx), by path: {"expand": {"flops", "bytes"}, "absorb": {...}, "pairs", "expanded"}. FLOPs
    are flops.attention_flops (with topk and distinct, its bounds on the tokens expanded). Bytes,
    in bf16 except the latent rows (kv_row_bytes each, default bf16 1,152):
      expand  the latent rows of the expanded tokens read, their K/V written (expanded_kv_bytes),
              the K/V read by the attention, q [n_new, H, 192] and out [n_new, H, 128]
      absorb  the latent rows read by the attention, q_lat [n_new, H, 576] and the latent out
              [n_new, H, 512]
    What the attention reads: dense, each row once (tiles of queries share every key tile). With
    topk, `reads` says: "pair" (the default) -- each (query, key) pair fetches its key's data for
    that query token alone, as a gather does when the queries' choices differ
    (bytes_per_selected_key: 81,920 expanded, one latent row absorbed; sparse.pair_intensity's
    model); "once" -- each distinct chosen token's data crosses memory once (every reuse caught).
    W_UK and W_UV (the same weights on both paths) are left out, as flops.py leaves them."""
    if reads not in ("pair", "once"):
        raise ValueError(f"reads must be 'pair' or 'once', got {reads!r}")
    e = BYTES_PER_ELEMENT["bf16"]
    row = kv_row_bytes if kv_row_bytes is not None else cfg.d_cache * e
    f = flops.attention_flops(n_new, n_ctx, topk=topk, distinct=distinct, **cfg.attention_shapes)
    if topk is None:
        pairs, expanded = flops.causal_pairs(n_new, n_ctx), n_ctx
        read_expand, read_absorb = expanded_kv_bytes(n_ctx, cfg), n_ctx * row
    else:
        pairs = flops.sparse_causal_pairs(n_new, n_ctx, topk)
        fewest, most = flops.distinct_selected_bounds(n_new, n_ctx, topk)
        expanded = {"most": most, "fewest": fewest}.get(distinct, distinct)
        per = pairs if reads == "pair" else expanded
        read_expand = per * bytes_per_selected_key("expand", cfg)
        read_absorb = per * row
    q_out_expand = e * n_new * cfg.n_heads * (cfg.d_qk + cfg.d_v)
    q_out_absorb = e * n_new * cfg.n_heads * (cfg.d_cache + cfg.d_latent)
    return {"expand": {"flops": f["expand"],
                       "bytes": expanded * row + expanded_kv_bytes(expanded, cfg) + read_expand + q_out_expand},
            "absorb": {"flops": f["absorb"], "bytes": read_absorb + q_out_absorb},
            "pairs": pairs, "expanded": expanded}


def expand_wins_from(n_ctx: int, cfg: MLAConfig = DEEPSEEK_V3, topk: int | None = None, distinct="most") -> int | None:
    """The smallest chunk n_new (1..n_ctx) at which the expand path has fewer FLOPs than the
    absorbed one for a sequence of n_ctx tokens (flops.choose_path), or None if it never does.
    Dense: about 512/3 = 171 new tokens whatever the context (flops.crossover_new_tokens), and a
    prompt with no prefix (n_new = n_ctx) is always expanded. Top-k: with every query's choice
    inside one set (distinct="fewest") about topk / 13 = 158 tokens whatever the context; with
    no shared choice (distinct="most") about n_ctx / 13 (flops.sparse_expand_fraction). The
    answer is found by bisection: expand's FLOP advantage grows with n_new in every case
    (tests/test_core_prefill.py checks that on a grid)."""
    shapes = cfg.attention_shapes

    def expand_wins(n):
        return flops.choose_path(n, n_ctx, topk=topk, distinct=distinct, **shapes) == "expand"
    if n_ctx < 1:
        raise ValueError(f"n_ctx must be >= 1, got {n_ctx}")
    if not expand_wins(n_ctx):
        return None
    lo, hi = 0, n_ctx  # expand loses at lo (or lo = 0), wins at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if expand_wins(mid) else (mid, hi)
    return hi


def prefill_roofline(n_new: int, n_ctx: int, gpu, cfg: MLAConfig = DEEPSEEK_V3, topk: int | None = None,
                     distinct="most", kv_row_bytes: int | None = None, reads: str = "pair") -> dict:
    """Each path's intensity (FLOP/byte) and roofline time in seconds, max(FLOPs / bf16 peak, bytes
    / bandwidth), for prefill_costs on a GPU of mlacourse.hardware: a model, not a measurement.
    `bound` says which roof each path sits under."""
    from .hardware import get
    g = get(gpu) if isinstance(gpu, str) else gpu
    c = prefill_costs(n_new, n_ctx, cfg, topk, distinct, kv_row_bytes, reads)
    out = {}
    for path in ("expand", "absorb"):
        f, by = c[path]["flops"], c[path]["bytes"]
        compute, memory = f / (g.bf16_tflops * 1e12), by / (g.hbm_gbps * 1e9)
        out[path] = {"intensity": f / by, "seconds": max(compute, memory),
                     "bound": "compute" if compute >= memory else "memory"}
    out["ridge"] = g.ridge("bf16")
    return out


def ridge_sequence_length(gpu, cfg: MLAConfig = DEEPSEEK_V3, causal: bool = True) -> float:
    """The prefill length N (no prefix, one sequence) from which the expand path's attention
    kernel alone is compute-bound on `gpu`: fa_flops(1, H, N, N, 192, 128) over
    prefill_attention_bytes(N, N) reaches the bf16 ridge. Intensity grows like N, so this is a
    few hundred tokens: prefill attention is compute-bound, its ceiling the tensor-core peak."""
    from .hardware import get
    g = get(gpu) if isinstance(gpu, str) else gpu
    ridge = g.ridge("bf16")

    def intensity(n):
        return fa_flops(1, cfg.n_heads, n, n, cfg.d_qk, cfg.d_v, causal) / \
            prefill_attention_bytes(n, n, cfg.n_heads, cfg.d_qk, cfg.d_v)
    lo, hi = 1, 2
    while intensity(hi) < ridge:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if intensity(mid) < ridge else (lo, mid)
    return float(hi)

