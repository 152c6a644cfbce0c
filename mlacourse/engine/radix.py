"""A model of SGLang's radix-tree prefix cache, to measure against the engine's chained
block hashes (prefix_cache.py) on the same requests.

SGLang (python/sglang/srt/mem_cache/radix_cache.py) keeps every cached token sequence in
one radix tree: each node holds a run of tokens (and their cache slots), its children
continue it with different next tokens. A lookup walks the tree from the root as far as
the request's tokens match, splitting a node where the match ends inside it; a finished
request's tokens are inserted (what is already in the tree is shared, the rest added).
A node on a running request's path is locked (lock_ref > 0). Memory is freed by
evicting unlocked leaves, least recently used first; a parent whose last child went
becomes a leaf and may go next, in the same pass (evict_lru below, problem 15).

Its page size: 1 by default, so a match can end on any token -- the tree shares partial
pages that a block hash cannot. With a page size P > 1 (SGLang sets P = 64 for its
FlashMLA backend, the page FlashMLA's kernel reads) the keys are cut to whole pages and
a match ends on a page boundary, exactly like the hash chain's full blocks.

This is a model (no rows, no slots, one clock tick per engine step), enough to count
hits and cached tokens for a sequence of admissions and releases taken from an engine's
trace (replay)."""
from __future__ import annotations

import heapq

import numpy as np


def evict_lru(parent, tokens, last_access, in_use, n_needed: int) -> list[int]:
    """Which nodes of a radix cache to evict to free at least n_needed tokens.

    parent [n] int     parent node of each node, -1 for a child of the root
    tokens [n] int     tokens (cache slots) each node holds, >= 1
    last_access [n]    when each node was last used (a larger number is more recent)
    in_use [n] bool    node on a running request's path (locked): never evicted
    Repeatedly evicts, among the nodes not in use with no child left (every child already
    evicted), the least recently used one -- ties to the smaller node index -- until the
    evicted nodes hold at least n_needed tokens or nothing more can go. A parent whose
    last child is evicted becomes a candidate at once. Returns the evicted nodes in
    eviction order (all it could, if that is fewer than n_needed tokens). The inputs are
    not changed."""
    parent = np.asarray(parent, dtype=np.int64)
    tokens = np.asarray(tokens, dtype=np.int64)
    last_access = np.asarray(last_access)
    in_use = np.asarray(in_use, dtype=bool)
    n = len(parent)
    if not (tokens.shape == last_access.shape == in_use.shape == (n,)):
        raise ValueError(f"parent, tokens, last_access and in_use must have one entry per node, got shapes "
                         f"{parent.shape}, {tokens.shape}, {last_access.shape}, {in_use.shape}")
    if n and (parent.min() < -1 or parent.max() >= n or (tokens < 1).any()):
        raise ValueError("parent entries must be -1 or a node index, and every node holds >= 1 token")
    if n_needed < 0:
        raise ValueError(f"n_needed must be >= 0, got {n_needed}")
    children = np.zeros(n, dtype=np.int64)  # [n] children not evicted yet
    np.add.at(children, parent[parent >= 0], 1)
    heap = [(last_access[i], i) for i in range(n) if not in_use[i] and children[i] == 0]
    heapq.heapify(heap)
    out, freed = [], 0
    while freed < n_needed and heap:
        _, i = heapq.heappop(heap)
        out.append(int(i))
        freed += int(tokens[i])
        p = parent[i]
        if p >= 0:
            children[p] -= 1
            if children[p] == 0 and not in_use[p]:
                heapq.heappush(heap, (last_access[p], int(p)))
    return out


class RadixTree:
    """A radix tree of token sequences with lock counts and LRU times (node 0 is the root).

    key[i]       the tokens node i adds after its parent's (a multiple of page_size)
    children[i]  first token (or first page of tokens) -> child node
    Evicted nodes stay in the lists, marked dead (their ids are never reused)."""

    def __init__(self, page_size: int = 1):
        if page_size < 1:
            raise ValueError(f"page_size must be >= 1, got {page_size}")
        self.page_size = page_size
        self.parent, self.key, self.children = [-1], [()], [{}]
        self.lock, self.last, self.alive = [1], [0], [True]  # the root is never evicted
        self.clock = 0
        self.size = 0  # tokens held by live nodes

    def _child_key(self, tokens):
        return tuple(tokens[:self.page_size])

    def _new(self, parent: int, key: tuple) -> int:
        i = len(self.parent)
        self.parent.append(parent)
        self.key.append(key)
        self.children.append({})
        self.lock.append(0)
        self.last.append(self.clock)
        self.alive.append(True)
        self.children[parent][self._child_key(key)] = i
        return i

    def _split(self, i: int, at: int) -> int:
        """Cut node i after `at` tokens: a new node takes the first part, i keeps the rest."""
        key, p = self.key[i], self.parent[i]
        del self.children[p][self._child_key(key)]
        j = self._new(p, key[:at])
        self.lock[j], self.last[j] = self.lock[i], max(self.last[i], self.clock)
        self.parent[i], self.key[i] = j, key[at:]
        self.children[j][self._child_key(self.key[i])] = i
        return j

    def _matched(self, a, b) -> int:
        """Tokens of a and b that match from the start, in whole pages."""
        n = 0
        for x, y in zip(a, b):
            if x != y:
                break
            n += 1
        return n - n % self.page_size

    def match(self, tokens) -> tuple[int, int]:
        """(tokens matched, the node where the match ends) for a lookup of `tokens`, cut to
        whole pages; touches every node on the path."""
        tokens = tuple(tokens[:len(tokens) - len(tokens) % self.page_size])
        node, n = 0, 0
        while n < len(tokens):
            child = self.children[node].get(self._child_key(tokens[n:]))
            if child is None:
                break
            m = self._matched(self.key[child], tokens[n:])
            if m == 0:
                break
            if m < len(self.key[child]):
                child = self._split(child, m)
            self.last[child] = self.clock
            node, n = child, n + m
        return n, node

    def lock_path(self, node: int, delta: int) -> None:
        while node != 0:
            self.lock[node] += delta
            node = self.parent[node]

    def insert(self, tokens) -> int:
        """Put `tokens` (cut to whole pages) in the tree; returns the tokens newly stored."""
        tokens = tuple(tokens[:len(tokens) - len(tokens) % self.page_size])
        n, node = self.match(tokens)
        if n < len(tokens):
            self._new(node, tokens[n:])
            self.size += len(tokens) - n
        return len(tokens) - n

    def evict(self, n_tokens: int) -> int:
        """Evict unlocked leaves, LRU first (evict_lru), until n_tokens are freed or nothing
        more can go. Returns the tokens freed."""
        ids = [i for i in range(1, len(self.parent)) if self.alive[i]]
        index = {i: k for k, i in enumerate(ids)}
        parent = [index.get(self.parent[i], -1) for i in ids]
        gone = evict_lru(parent, [len(self.key[i]) for i in ids], [self.last[i] for i in ids],
                         [self.lock[i] > 0 for i in ids], n_tokens)
        freed = 0
        for k in gone:
            i = ids[k]
            self.alive[i] = False
            del self.children[self.parent[i]][self._child_key(self.key[i])]
            freed += len(self.key[i])
        self.size -= freed
        return freed


def replay(events, capacity_tokens: int, page_size: int = 1) -> dict:
    """Run a sequence of admissions and releases through a radix cache of capacity_tokens.

    events: [(step, kind, rid, tokens)] in order; kind "admit" (tokens = the request's
    known tokens) or "release" (tokens = its cached tokens). An admitted request matches
    at most len(tokens) - 1 tokens (one must run for the next token's logits); its tokens
    then join the tree at once (SGLang inserts a request's prefill as it is computed) and
    its path is locked until it is released, when its cached tokens (the generated ones
    too) are inserted. Tokens past the last whole page are held privately. When the tree
    and the private tokens would pass capacity_tokens, unlocked leaves are evicted (a
    locked path may still pass it: the model does not preempt).
    Returns hit tokens, looked-up tokens, the hit rate, the peak of tokens held, evictions."""
    tree = RadixTree(page_size)
    held, private = {}, 0
    hits = looked = peak = evicted = 0

    def make_room():
        nonlocal evicted
        over = tree.size + private - capacity_tokens
        if over > 0:
            evicted += tree.evict(over)

    for step, kind, rid, tokens in events:
        tree.clock = step
        tail = len(tokens) % page_size
        if kind == "admit":
            n_hit, _ = tree.match(tokens[:len(tokens) - 1])
            hits, looked = hits + n_hit, looked + len(tokens)
            private += tail
            tree.insert(tokens)
            node = tree.match(tokens)[1]
            tree.lock_path(node, +1)
            held[rid] = (node, tail)
            make_room()
        elif kind == "release":
            node, own = held.pop(rid)
            private -= own  # the admitted tail was private; a released tail is dropped
            tree.insert(tokens)
            tree.lock_path(node, -1)
            make_room()
        else:
            raise ValueError(f"event kind must be 'admit' or 'release', got {kind!r}")
        peak = max(peak, tree.size + private)
    return dict(hit_tokens=hits, looked_up=looked, hit_rate=hits / looked if looked else 0.0,
                peak_tokens=peak, evicted_tokens=evicted, cached_tokens=tree.size)
