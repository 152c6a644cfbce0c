"""Paged latent cache (FlashMLA layout) in numpy: build one, gather it back.

  kv_cache      [num_blocks, page_block_size, h_kv, d]   pages of cached rows
  block_table   [b, max_blocks] int32                    page ids per sequence, in order
  cache_seqlens [b] int32                                valid tokens per sequence
Token t of sequence i lives at kv_cache[block_table[i, t // P], t % P]."""
from __future__ import annotations

import numpy as np


def gather_paged(kv_cache, block_table, cache_seqlens, seq: int) -> np.ndarray:
    """The valid rows of sequence `seq`: [cache_seqlens[seq], h_kv, d].

    Touches only the block-table entries and slots it needs, so poisoned unused
    pages and out-of-range unused table entries are never read."""
    n = int(cache_seqlens[seq])
    page = kv_cache.shape[1]
    n_pages = -(-n // page)
    rows = [kv_cache[int(block_table[seq, j])] for j in range(n_pages)]  # [P, h_kv, d] each
    if not rows:
        return kv_cache[:0, 0]
    return np.concatenate(rows, axis=0)[:n]


def make_paged_cache(seqs, page_block_size: int, rng: np.random.Generator, extra_blocks: int = 3,
                     poison: float = np.nan, bad_table_entry: int = 2**31 - 1):
    """Scatter per-sequence rows [n_i, h_kv, d] into shuffled pages.

    Unused slots hold `poison` (NaN), unused block-table entries hold an out-of-range
    page id, and a few spare pages are never referenced -- a reader that touches any of
    them produces NaN or an index error instead of a silently right answer.
    Returns kv_cache, block_table, cache_seqlens."""
    seqs = [np.asarray(s) for s in seqs]
    h_kv, d = seqs[0].shape[1:]
    need = [-(-len(s) // page_block_size) for s in seqs]
    num_blocks = sum(need) + extra_blocks
    kv_cache = np.full((num_blocks, page_block_size, h_kv, d), poison, dtype=np.float64)
    perm = rng.permutation(num_blocks)
    max_blocks = max(max(need), 1)
    block_table = np.full((len(seqs), max_blocks), bad_table_entry, dtype=np.int64)
    nxt = 0
    for i, s in enumerate(seqs):
        for j in range(need[i]):
            blk = perm[nxt]
            nxt += 1
            block_table[i, j] = blk
            rows = s[j * page_block_size:(j + 1) * page_block_size]
            kv_cache[blk, :len(rows)] = rows
    return kv_cache, block_table, np.array([len(s) for s in seqs], dtype=np.int32)


# ---- why pages: memory accounting for a serving engine ----------------------------------
# The page allocator itself (block tables, reference counts, copy-on-write) lives in
# mlacourse/engine/pages.py: share_prefix, append_slots, release.

def pages_needed(n_tokens, page_block_size: int):
    """Pages that hold n_tokens rows: ceil(n_tokens / page_block_size). Works on an int
    (returns an int) and on an integer array (returns an array)."""
    if page_block_size < 1:
        raise ValueError(f"page_block_size must be >= 1, got {page_block_size}")
    if isinstance(n_tokens, (int, np.integer)):  # the engine's hot path: plain ints
        if n_tokens < 0:
            raise ValueError(f"token counts must be >= 0, got {n_tokens}")
        return -(-int(n_tokens) // page_block_size)
    n = np.asarray(n_tokens, dtype=np.int64)  # 64-bit even where numpy's default int is 32 (wasm)
    if np.any(n < 0):
        raise ValueError("token counts must be >= 0")
    out = -(-n // page_block_size)
    return int(out) if out.ndim == 0 else out


def paged_slack(lengths, page_block_size: int) -> int:
    """Token slots allocated but unused when each sequence holds whole pages: at most
    page_block_size - 1 per sequence (its last, partly filled page),
    sum_i (ceil(n_i / P) * P - n_i)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return int((pages_needed(lengths, page_block_size) * page_block_size - lengths).sum())


def contiguous_slack(lengths, reserved: int) -> int:
    """Token slots unused when each sequence reserves one contiguous slab of `reserved`
    tokens up front (it cannot grow in place past it, so the slab is sized for the longest
    request the server accepts)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if np.any(lengths > reserved):
        raise ValueError(f"a sequence of {int(lengths.max())} tokens does not fit a slab of {reserved}")
    return int((reserved - lengths).sum())
