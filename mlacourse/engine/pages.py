"""The paged latent cache: a pool of fixed-size pages, one block table per request,
reference counts for shared prefixes, copy-on-write for a shared, partly filled last page.

  pool.data    [n_layers, num_pages, page_size, 1, d_cache]   one FlashMLA kv_cache per layer
  block table  list of page ids of one request, in token order (the same ids in every layer)
  seqlen       valid tokens of that request
Token t of a request lives at data[layer, table[t // page_size], t % page_size, 0].

The bookkeeping is three small functions on plain lists -- share_prefix, append_slots,
release -- which PagePool applies to its arrays. They are the whole allocator:
  refcount[p]  how many block tables hold page p (0: the page is free)
  free         the free page ids; pages are taken from its end (free.pop())
The page-count and slack formulas (pages_needed, paged_slack) live in mlacourse.paged.
A page is written only by a request that holds it alone (refcount 1): a shared page
whose free slots are about to be filled is copied first (copy-on-write). Full pages are
never written again, so they can be shared for as long as anyone needs them.

With a prefix cache (prefix_cache.PrefixCache) a page whose refcount drops to 0 may stay
cached instead of going back to `free`; it is evicted (made free) only when an
allocation finds the free list short. A slot mapping names each new row's place in the
pool as one number, page * page_size + slot -- what a GPU pool is written through.
"""
from __future__ import annotations

import numpy as np

from ..paged import gather_paged, pages_needed  # noqa: F401 -- the page count lives in mlacourse.paged


class OutOfPages(RuntimeError):
    """The pool has fewer free pages than an allocation needs. Nothing was changed."""


def _check_table(table, seqlen: int, page_size: int, refcount) -> None:
    if len(table) != pages_needed(seqlen, page_size):
        raise ValueError(f"a block table for {seqlen} tokens at page_size {page_size} has "
                         f"{pages_needed(seqlen, page_size)} pages, got {len(table)}: {list(table)}")
    for p in table:
        if not 0 <= p < len(refcount) or refcount[p] < 1:
            raise ValueError(f"page {p} in the block table is not an allocated page of this pool")


def share_prefix(src_table, n_shared: int, page_size: int, refcount) -> list[int]:
    """Block table of a new request whose first n_shared tokens are those of src_table's.

    It holds the pages covering those tokens -- the last one possibly partly, in which
    case its slots past n_shared belong to the source and will be copied away before the
    new request writes there. Each shared page gains a reference. Mutates refcount."""
    n_pages = pages_needed(n_shared, page_size)
    if n_pages > len(src_table):
        raise ValueError(f"cannot share {n_shared} tokens: the source table covers only "
                         f"{len(src_table) * page_size} slots")
    table = list(src_table[:n_pages])
    for p in table:
        refcount[p] += 1
    return table


def pages_to_append(table, seqlen: int, n_new: int, page_size: int, refcount) -> tuple[int, bool]:
    """(new pages, copy-on-write?) that append_slots needs to add n_new tokens after seqlen."""
    cow = n_new > 0 and seqlen % page_size > 0 and refcount[table[-1]] > 1
    return pages_needed(seqlen + n_new, page_size) - len(table), cow


def slot_mapping(table, start: int, n: int, page_size: int) -> np.ndarray:
    """Where tokens start .. start+n-1 of a request live in the pool, as flat slot numbers
    page * page_size + slot, [n] int64 (one number per row: what a GPU pool is written
    through, kv.view(-1, d)[slots] = rows)."""
    pos = np.arange(start, start + n, dtype=np.int64)  # [n]
    if n and pos[-1] // page_size >= len(table):
        raise IndexError(f"token {int(pos[-1])} is past the block table ({len(table)} pages); append first")
    return np.asarray(table, dtype=np.int64).reshape(-1)[pos // page_size] * page_size + pos % page_size


def append_slots(table, seqlen: int, n_new: int, page_size: int, refcount, free) -> list[tuple[int, int, int]]:
    """Make room in `table` for n_new more tokens after the seqlen it holds.

    1. Copy-on-write: if the last page is partly filled (seqlen % page_size != 0) and
       shared (refcount > 1), take a free page, record a copy of its seqlen % page_size
       valid slots, drop one reference to the old page and put the new one in its place.
    2. Take free pages until the table covers seqlen + n_new tokens.
    Returns the copies to make, [(src_page, dst_page, n_slots)]. Mutates table, refcount
    and free; raises OutOfPages, changing nothing, when free has too few pages."""
    if n_new < 0:
        raise ValueError(f"n_new must be >= 0, got {n_new}")
    _check_table(table, seqlen, page_size, refcount)
    partial = seqlen % page_size
    grow, cow = pages_to_append(table, seqlen, n_new, page_size, refcount)
    if grow + cow > len(free):
        raise OutOfPages(f"need {grow + cow} free pages ({grow} new, {int(cow)} copy-on-write) to add "
                         f"{n_new} tokens after {seqlen}, but only {len(free)} of {len(refcount)} are free")
    copies = []
    if cow:
        old, new = table[-1], free.pop()
        refcount[old] -= 1
        refcount[new] = 1
        table[-1] = new
        copies.append((old, new, partial))
    for _ in range(grow):
        p = free.pop()
        refcount[p] = 1
        table.append(p)
    return copies


def release(table, refcount, free) -> list[int]:
    """Drop the table's reference to each of its pages; pages nobody holds any more go
    back to the end of free (in table order). Returns those pages; empties table."""
    freed = []
    for p in table:
        if refcount[p] < 1:
            raise ValueError(f"page {p} is already free: released twice?")
        refcount[p] -= 1
        if refcount[p] == 0:
            freed.append(p)
    free.extend(freed)
    table.clear()
    return freed


def longest_shared_prefix(tokens, cached) -> tuple[int | None, int]:
    """Which of the `cached` token lists shares the longest prefix with `tokens`, and how
    long it is: (index, length), (None, 0) when none shares a first token. Ties go to
    the earliest candidate."""
    best, best_len = None, 0
    for i, other in enumerate(cached):
        n = 0
        for a, b in zip(tokens, other):
            if a != b:
                break
            n += 1
        if n > best_len:
            best, best_len = i, n
    return best, best_len


def pages_for_requests(seqlens, page_size: int, shared_len: int = 0) -> int:
    """Pages held by requests of the given lengths that all start with the same
    shared_len tokens, stored once: the full pages of the shared prefix are counted once,
    everything else (including each request's copy of a partly shared page) per request.
    sum_i ceil(n_i / P) - (N - 1) * floor(shared_len / P)."""
    seqlens = list(seqlens)
    if any(n < shared_len for n in seqlens):
        raise ValueError(f"every request must hold the {shared_len} shared tokens, got lengths {seqlens}")
    total = sum(pages_needed(n, page_size) for n in seqlens)
    return total - max(len(seqlens) - 1, 0) * (shared_len // page_size)


class PagePool:
    """The page pool of every layer plus the allocator's state.

    With poison=True (the default) free pages are filled with NaN, so a read that goes
    through a wrong block-table entry or past a request's length shows up as NaN in the
    logits instead of a silently plausible number. data is None for a bookkeeping-only
    pool (store_rows=False), used to simulate schedules without computing.

    cache   a PrefixCache, or None: released pages that hold a cached block stay (rows
            and all) until an allocation needs them
    mirror  an object with write(layer, slots, rows), copy(src, dst, n_slots) and
            poison(pages), told of every change to the rows (a copy of the pool on a GPU)"""

    def __init__(self, n_layers: int, num_pages: int, page_size: int, d_cache: int,
                 poison: bool = True, store_rows: bool = True, cache=None, mirror=None):
        if num_pages < 1 or page_size < 1:
            raise ValueError(f"need num_pages >= 1 and page_size >= 1, got {num_pages}, {page_size}")
        self.n_layers, self.num_pages, self.page_size, self.d_cache = n_layers, num_pages, page_size, d_cache
        self.poison = poison
        self.data = None
        if store_rows:
            fill = np.nan if poison else 0.0
            self.data = np.full((n_layers, num_pages, page_size, 1, d_cache), fill)  # [L, pages, P, 1, d]
        self.refcount = [0] * num_pages
        self.free = list(range(num_pages - 1, -1, -1))  # pop() hands out page 0 first
        self.cache, self.mirror = cache, mirror

    @property
    def pages_cached(self) -> int:
        """Pages no table holds that keep a cached block (evictable)."""
        return len(self.cache.evictable) if self.cache else 0

    @property
    def pages_in_use(self) -> int:
        return self.num_pages - len(self.free) - self.pages_cached

    def _poison(self, pages) -> None:
        if pages and self.data is not None and self.poison:
            self.data[:, pages] = np.nan
        if pages and self.mirror is not None:
            self.mirror.poison(pages)

    def share(self, src_table, n_shared: int) -> list[int]:
        return share_prefix(src_table, n_shared, self.page_size, self.refcount)

    def take_cached(self, pages) -> list[int]:
        """A block table made of cached pages (a prefix-cache hit): each gains a reference
        and, if nobody held it, leaves the cache's LRU queue."""
        for p in pages:
            if self.refcount[p] == 0:
                self.cache.take(p)
            self.refcount[p] += 1
        return list(pages)

    def append(self, table, seqlen: int, n_new: int) -> list[tuple[int, int, int]]:
        """append_slots, after evicting cached pages if the free list is short (and the
        evictable pages make up for it: otherwise nothing is evicted and OutOfPages is
        raised), then the copies it asks for, in every layer."""
        if self.cache is not None:
            grow, cow = pages_to_append(table, seqlen, n_new, self.page_size, self.refcount)
            short = grow + cow - len(self.free)
            if 0 < short <= self.pages_cached:
                evicted = self.cache.evict(short)
                self._poison(evicted)
                self.free.extend(evicted)
        copies = append_slots(table, seqlen, n_new, self.page_size, self.refcount, self.free)
        for src, dst, n in copies:
            if self.data is not None:
                self.data[:, dst, :n] = self.data[:, src, :n]
            if self.mirror is not None:
                self.mirror.copy(src, dst, n)
        return copies

    def release(self, table) -> list[int]:
        """Drop the table's references. Pages nobody holds go back to free -- unless they
        hold a cached block: then they join the cache's LRU queue, tail pages first.
        Returns the pages that became free."""
        freed = release(table, self.refcount, self.free)
        if self.cache is not None and freed:
            kept = set(self.cache.keep(reversed(freed)))  # the request's last page is evicted first
            if kept:
                self.free[:] = [p for p in self.free if p not in kept]
                freed = [p for p in freed if p not in kept]
        self._poison(freed)
        return freed

    def write(self, layer: int, table, start: int, rows) -> None:
        """Store rows [n, d_cache] as tokens start .. start+n-1 of the request. Every page
        written must be held by this request alone: writing a shared page would change
        another request's cache, so it is an error, not a silent overwrite. A cached page
        is never written either: it is full, and full pages are only appended after."""
        rows = np.asarray(rows)
        slots = slot_mapping(table, start, rows.shape[0], self.page_size)  # [n]
        pages = slots // self.page_size
        shared = sorted({int(p) for p in pages if self.refcount[p] != 1})
        cached = sorted({int(p) for p in pages if self.cache is not None and int(p) in self.cache.hash_of})
        if shared or cached:
            bad = shared or cached
            raise RuntimeError(f"refusing to write pages {bad} (refcounts {[self.refcount[p] for p in bad]}"
                               f"{', cached' if cached else ''}): only a page held by one request and not "
                               f"cached may be written; append_slots copies shared pages first")
        self.data[layer].reshape(-1, self.d_cache)[slots] = rows
        if self.mirror is not None:
            self.mirror.write(layer, slots, rows)

    def read(self, layer: int, table, n: int) -> np.ndarray:
        """The first n rows of a request, [n, d_cache], gathered through its block table."""
        bt = np.asarray([list(table)], dtype=np.int64).reshape(1, -1)  # [1, max_blocks]
        return gather_paged(self.data[layer], bt, np.array([n]), 0)[:, 0]  # [n, 1, d] -> [n, d]

    def read_all_layers(self, table, n: int) -> np.ndarray:
        """The first n rows of a request in every layer, [n_layers, n, d_cache] (a swap-out)."""
        return np.stack([self.read(layer, table, n) for layer in range(self.n_layers)])
