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

def pages_needed(n_tokens, page_block_size: int):
    """Pages that hold n_tokens (ceil division); works on ints and integer arrays."""
    if page_block_size < 1:
        raise ValueError(f"page_block_size must be >= 1, got {page_block_size}")
    n = np.asarray(n_tokens)
    if np.any(n < 0):
        raise ValueError("token counts must be >= 0")
    out = -(-n // page_block_size)
    return int(out) if out.ndim == 0 else out


def paged_slack(lengths, page_block_size: int) -> int:
    """Token slots allocated but unused when each sequence holds whole pages: at most
    page_block_size - 1 per sequence (its last, partly filled page)."""
    lengths = np.asarray(lengths)
    return int((pages_needed(lengths, page_block_size) * page_block_size - lengths).sum())


def contiguous_slack(lengths, reserved: int) -> int:
    """Token slots unused when each sequence reserves one contiguous slab of `reserved`
    tokens up front (it cannot grow in place past it, so the slab is sized for the longest
    request the server accepts)."""
    lengths = np.asarray(lengths)
    if np.any(lengths > reserved):
        raise ValueError(f"a sequence of {int(lengths.max())} tokens does not fit a slab of {reserved}")
    return int((reserved - lengths).sum())


class PagePool:
    """A page allocator with block tables and reference counts, the bookkeeping behind a
    paged KV cache (vLLM's PagedAttention, SGLang, FlashMLA's block_table argument).

    * growth never copies: append() adds pages; rows already cached stay where they are;
    * sequences can share the full pages of a common prefix (fork): a page is freed when
      its last user frees it;
    * the only slack is each sequence's last, partly filled page."""

    def __init__(self, num_pages: int, page_block_size: int):
        if num_pages < 1 or page_block_size < 1:
            raise ValueError("num_pages and page_block_size must be >= 1")
        self.page_block_size = page_block_size
        self.refcount = np.zeros(num_pages, dtype=np.int64)
        self.tables: dict[int, list[int]] = {}
        self.lengths: dict[int, int] = {}
        self._next_id = 0

    def _alloc(self) -> int:
        free = np.flatnonzero(self.refcount == 0)
        if not len(free):
            raise MemoryError(f"out of pages: all {len(self.refcount)} are in use")
        self.refcount[free[0]] = 1
        return int(free[0])

    def new_sequence(self) -> int:
        sid, self._next_id = self._next_id, self._next_id + 1
        self.tables[sid], self.lengths[sid] = [], 0
        return sid

    def append(self, sid: int, n_tokens: int = 1) -> list[int]:
        """Grow sequence sid by n_tokens; returns the pages it had to allocate."""
        new = []
        while pages_needed(self.lengths[sid] + n_tokens, self.page_block_size) > len(self.tables[sid]):
            new.append(self._alloc())
            self.tables[sid].append(new[-1])
        self.lengths[sid] += n_tokens
        return new

    def fork(self, sid: int) -> int:
        """A new sequence that shares sid's full pages (its cached prefix) by reference; a
        partly filled last page is copied into a fresh page (copy-on-write), since both
        sequences will write their next tokens there. Returns the new id."""
        child = self.new_sequence()
        n, p = self.lengths[sid], self.page_block_size
        full = n // p
        for page in self.tables[sid][:full]:
            self.refcount[page] += 1
            self.tables[child].append(page)
        if n % p:
            self.tables[child].append(self._alloc())  # the copied tail page
        self.lengths[child] = n
        return child

    def free(self, sid: int) -> None:
        for page in self.tables.pop(sid):
            self.refcount[page] -= 1
        del self.lengths[sid]

    @property
    def pages_in_use(self) -> int:
        return int((self.refcount > 0).sum())

    def block_table(self, sids, fill: int = -1) -> np.ndarray:
        """[len(sids), max pages] int32 block table, unused entries = fill."""
        width = max([len(self.tables[s]) for s in sids] + [1])
        out = np.full((len(sids), width), fill, dtype=np.int32)
        for i, s in enumerate(sids):
            out[i, :len(self.tables[s])] = self.tables[s]
        return out
