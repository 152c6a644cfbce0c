"""A prefix cache that outlives requests: full pages found by chained block hashes, kept
after their last request finishes, and evicted least recently used first.

This is the design of vLLM's V1 engine (its KV cache manager and block pool):

  block hash   h_i = sha256(h_{i-1} || the page_size token ids of block i); h_{-1} is empty.
               A block's hash names the whole prefix up to the block's end, so equal
               hashes mean equal tokens at equal positions -- hence equal cache rows.
  full blocks  only a full page gets a hash: a partly filled page is still being written
               by its owner, its content (and so its hash) is not final. A new request
               therefore reuses whole pages and never writes into a shared one: no
               copy-on-write is needed. The price: up to page_size - 1 matching tokens of
               the last, partial block are recomputed.
  one token    a hit may cover at most len(tokens) - 1 tokens (full pages, so it may stop
               a page earlier): the last prompt token must run to give the logits of the
               first new token.
  eviction     a page whose last block table lets go of it (refcount 0) keeps its rows and
               its hash and joins the end of an LRU queue; pages are taken from the front
               only when the free list runs short (lazy eviction). A request releases its
               pages tail first, so its deeper blocks leave before the prefix they hang on.

The hashes are sha256 (hashlib, also in the browser's Python), so a collision -- two
different prefixes with one hash, which would hand a request someone else's rows -- is
not a practical concern; Python's built-in hash() of tuples would be faster but 64-bit.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np


def block_hash(parent: bytes, block_tokens) -> bytes:
    """sha256 of the parent block's hash and this block's token ids (as little-endian int64)."""
    return hashlib.sha256(parent + np.asarray(block_tokens, dtype="<i8").tobytes()).digest()


def extend_block_hashes(hashes: list, tokens, page_size: int) -> list:
    """Append to `hashes` the hashes of the full blocks of `tokens` it does not cover yet.
    hashes[i] names tokens[: (i + 1) * page_size]. Returns hashes (changed in place)."""
    for i in range(len(hashes), len(tokens) // page_size):
        hashes.append(block_hash(hashes[-1] if hashes else b"", tokens[i * page_size:(i + 1) * page_size]))
    return hashes


def block_hashes(tokens, page_size: int) -> list:
    """The chained hashes of every full block of `tokens`."""
    return extend_block_hashes([], tokens, page_size)


class PrefixCache:
    """The bookkeeping of cached pages; PagePool owns the rows and the refcounts.

    page_of    block hash -> the page that holds that block (one page per hash)
    hash_of    page -> its block hash (pages that are cached, in use or not)
    evictable  the cached pages no block table holds, least recently released first"""

    def __init__(self, page_size: int):
        self.page_size = page_size
        self.page_of: dict[bytes, int] = {}
        self.hash_of: dict[int, bytes] = {}
        self.evictable: OrderedDict[int, None] = OrderedDict()
        self.evictions = 0

    def lookup(self, hashes, n_tokens: int) -> list[int]:
        """Pages of the longest run of cached blocks at the start of a request of n_tokens
        tokens whose block hashes are `hashes`, leaving at least one token to compute."""
        max_blocks = (n_tokens - 1) // self.page_size
        pages = []
        for h in hashes[:max_blocks]:
            p = self.page_of.get(h)
            if p is None:
                break  # the chain is broken: later blocks cannot be reached
            pages.append(p)
        return pages

    def register(self, hashes, table, n_full: int, start: int = 0) -> int:
        """Cache full pages start .. n_full-1 of a block table whose blocks have `hashes`.
        A block already cached in another page is left alone: this page is a duplicate and
        will go back to the free list when released. Returns the pages newly cached."""
        new = 0
        for i in range(start, n_full):
            h, p = hashes[i], table[i]
            if h in self.page_of or p in self.hash_of:
                continue
            self.page_of[h], self.hash_of[p] = p, h
            new += 1
        return new

    def keep(self, pages) -> list[int]:
        """Of `pages` (just released by every table, in release order), keep the cached ones
        at the end of the LRU queue. Returns the pages kept."""
        kept = [p for p in pages if p in self.hash_of]
        for p in kept:
            self.evictable[p] = None
        return kept

    def take(self, page: int) -> None:
        """A cached page is held again: it leaves the LRU queue."""
        self.evictable.pop(page, None)

    def evict(self, n: int) -> list[int]:
        """Forget the n least recently released cached pages; returns them (to be freed)."""
        out = []
        for _ in range(min(n, len(self.evictable))):
            p, _ = self.evictable.popitem(last=False)
            del self.page_of[self.hash_of.pop(p)]
            out.append(p)
        self.evictions += len(out)
        return out
