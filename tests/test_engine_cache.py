"""The prefix cache that outlives requests (mlacourse.engine.prefix_cache), the radix-tree
model it is compared with (mlacourse.engine.radix) and its eviction rule.

The invariant (each request equals itself alone, float64) over random streams with the
cache is in tests/test_engine.py; here: targeted cases, the bookkeeping, and mutations of
each part of the cache that the invariant must catch."""
import numpy as np
import pytest

from mlacourse.engine import Engine, block_hash, block_hashes, submit
from mlacourse.engine import prefix_cache as pc_mod
from mlacourse.engine.radix import RadixTree, evict_lru, replay
from mlacourse.engine.workloads import shared_prompt_stream
from tests.test_engine import MODEL, TOL, check_bookkeeping, max_logit_error

SYSTEM = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26]  # 12 tokens: three full pages of 4
# [9, 9, 9, 9] is block 1 of the first prompt and block 0 of the second: equal tokens, other positions
UNCHAINED = [([1, 2, 3, 4, 9, 9, 9, 9, 7], 0), ([9, 9, 9, 9, 5, 6], 8)]


def late_followers(num_pages=24, page=4, **kw):
    """Requests that start with the same 12 tokens, each arriving after the one before
    finished, with an unrelated request between them (with 7 pages it evicts part of the
    cached prefix, tail first)."""
    eng = Engine(MODEL, num_pages=num_pages, page_size=page, token_budget=32, share_prefixes=False,
                 prefix_cache=True, **kw)
    reqs = {}
    for prompt, max_new, arrival in [(SYSTEM + [5, 6], 3, 0), (SYSTEM, 4, 10), (list(range(40, 60)), 2, 20),
                                     (SYSTEM + [8, 9, 1], 2, 30)]:
        reqs[eng.add_request(prompt, max_new, arrival=arrival)] = (prompt, max_new)
    return eng, reqs


# ---- the hashes --------------------------------------------------------------------

def test_block_hashes_are_chained_full_blocks():
    h = block_hashes([1, 2, 3, 4, 5, 6, 7], 3)
    assert len(h) == 2  # 7 tokens = two full blocks of 3 and a partial one, which has no hash
    assert h[0] == block_hash(b"", [1, 2, 3]) and h[1] == block_hash(h[0], [4, 5, 6])
    # the same block after a different prefix is a different block
    assert block_hashes([9, 2, 3, 4, 5, 6], 3)[1] != h[1]
    assert block_hashes([1, 2, 3, 4, 5, 6], 3) == h


# ---- the engine with the cache -------------------------------------------------------

def test_a_prompt_is_reused_after_its_request_finished():
    eng, reqs = late_followers()
    assert max_logit_error(eng, reqs) < TOL
    check_bookkeeping(eng)
    res = eng.results()
    assert res["r0"].cache_hit_tokens == 0
    # r1's prompt is exactly the 12 cached tokens, but one must run: full pages up to 11 tokens = 8
    assert res["r1"].cache_hit_tokens == 8 and res["r3"].cache_hit_tokens == 12
    assert res["r1"].computed_tokens == 12 - 8 + 3 and res["r3"].computed_tokens == 15 - 12 + 1
    first = next(r for r in eng.trace if any(rid == "r1" for rid, _ in r.admitted))
    assert first.hits == [("r1", 8)]
    assert eng.trace[-1].pages_cached > 0  # the pages outlive every request


def test_eviction_keeps_the_head_of_a_prefix():
    """With 7 pages the unrelated request evicts the cached prefix's pages deepest first as
    it grows (3 of the 4); the last request still finds the first page of the prefix, and
    its own allocation evicts two of the unrelated request's pages."""
    eng, reqs = late_followers(num_pages=7)
    assert max_logit_error(eng, reqs) < TOL
    check_bookkeeping(eng)
    by_step = {r.step: r for r in eng.trace}
    assert by_step[20].pages_cached == 2 and by_step[21].pages_cached == 6  # r2 evicted 2, then 1 more
    assert eng.pool.cache.evictions == 5 and eng.results()["r3"].cache_hit_tokens == 4


def test_without_the_cache_nothing_is_reused_across_time():
    eng = Engine(MODEL, num_pages=24, page_size=4, token_budget=16, share_prefixes=True)
    submit(eng, [("a", SYSTEM + [5, 6], 3, 0), ("b", SYSTEM + [7], 4, 10)])
    res = eng.run()
    assert res["b"].shared_tokens == 0 and res["b"].computed_tokens == 13 + 3


def test_only_full_pages_are_shared_through_the_cache():
    """A page that was partly filled when its request finished is not cached: the next
    request recomputes those tokens (no copy-on-write: it writes only its own pages)."""
    eng = Engine(MODEL, num_pages=24, page_size=8, token_budget=32, share_prefixes=False, prefix_cache=True)
    submit(eng, [("a", SYSTEM, 2, 0), ("b", SYSTEM + [1, 2], 2, 10)])
    res = eng.run()
    assert res["b"].cache_hit_tokens == 8  # SYSTEM's 12 tokens: one full page of 8
    assert not any(r.copies for r in eng.trace)


def test_lru_eviction_takes_the_oldest_unreferenced_pages_tail_first():
    # page 4, pool of 8 pages: a (12 + 2 tokens) and b (13 tokens) each leave 3 full pages cached
    eng = Engine(MODEL, num_pages=8, page_size=4, token_budget=32, share_prefixes=False, prefix_cache=True)
    eng.add_request(SYSTEM + [5, 6], 2, arrival=0, rid="a")
    eng.add_request([60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72], 2, arrival=5, rid="b")
    eng.run()
    cache = eng.pool.cache
    a_blocks, b_blocks = eng.requests["a"].block_hashes[:3], eng.requests["b"].block_hashes[:3]
    assert all(h in cache.page_of for h in a_blocks + b_blocks) and len(eng.pool.free) == 2
    eng.add_request(list(range(20, 44)), 3, rid="c")  # 24 tokens = 6 pages: 4 must be evicted
    rec = eng.step()
    assert rec.pages_in_use == 6 and cache.evictions == 4
    # a's pages went first (released earlier), then b's deepest block: b's first two stay
    assert not any(h in cache.page_of for h in a_blocks)
    assert [h in cache.page_of for h in b_blocks] == [True, True, False]
    eng.run()


def test_followers_keep_the_saving_when_they_arrive_late():
    """The sharing curve's point: live sharing saves nothing once q0 has finished; the cache does."""
    def computed(follower_arrival, live, cache):
        eng = Engine(MODEL.cfg, num_pages=400, page_size=16, token_budget=4096, compute=False,
                     share_prefixes=live, prefix_cache=cache, record_tables=False)
        submit(eng, shared_prompt_stream(8, 100, 96, follower_arrival=follower_arrival, seed=7, max_new=6))
        eng.run()
        return sum(r.computed_tokens for r in eng.requests.values())
    alone = computed(1, False, False)
    assert computed(1, True, False) < alone and computed(40, True, False) == alone
    assert computed(40, False, True) < alone


def test_bad_engine_options_are_refused():
    with pytest.raises(ValueError, match="on_full must be one of"):
        Engine(MODEL, num_pages=4, page_size=4, token_budget=4, on_full="drop")
    with pytest.raises(ValueError, match="prefill_cap"):
        Engine(MODEL, num_pages=4, page_size=4, token_budget=4, prefill_cap=0)


# ---- mutations the invariant catches ---------------------------------------------------

def test_mutation_baseline_passes():
    eng, reqs = late_followers(num_pages=7)
    assert max_logit_error(eng, reqs) < TOL and eng.pool.cache.evictions > 0
    eng = Engine(MODEL, num_pages=24, page_size=4, token_budget=16, share_prefixes=False, prefix_cache=True)
    reqs = {eng.add_request(p, 3, arrival=a): (p, 3) for p, a in UNCHAINED}
    assert max_logit_error(eng, reqs) < TOL


def test_mutation_a_stale_hash_after_eviction_is_caught(monkeypatch):
    """Evicting a page but leaving its hash: the next lookup hands out a page that now
    holds other rows (or NaN) -- the logits break."""
    def evict_keeping_hashes(self, n):
        out = []
        for _ in range(min(n, len(self.evictable))):
            p, _ = self.evictable.popitem(last=False)
            out.append(p)  # forgot: del self.page_of[self.hash_of.pop(p)]
        return out
    monkeypatch.setattr(pc_mod.PrefixCache, "evict", evict_keeping_hashes)
    eng, reqs = late_followers(num_pages=7)
    with pytest.raises((AssertionError, RuntimeError)):
        assert max_logit_error(eng, reqs) < TOL


def test_mutation_unchained_hashes_are_caught(monkeypatch):
    """Hashing a block's tokens without its prefix: the same block after a different start
    is taken for a hit, with another request's rows at those positions."""
    monkeypatch.setattr(pc_mod, "block_hash", lambda parent, block: block_hash(b"", block))
    eng = Engine(MODEL, num_pages=24, page_size=4, token_budget=16, share_prefixes=False, prefix_cache=True)
    reqs = {eng.add_request(p, 3, arrival=a): (p, 3) for p, a in UNCHAINED}
    with pytest.raises(AssertionError):
        assert max_logit_error(eng, reqs) < TOL


def test_mutation_caching_a_partial_page_is_caught(monkeypatch):
    """Registering the page that is still being filled (hashed over the tokens it holds so
    far): its owner's next rows would change a cached page under its hash. The pool refuses
    to write into a cached page, so the run stops with an error instead."""
    eng = Engine(MODEL, num_pages=24, page_size=4, token_budget=16, share_prefixes=False, prefix_cache=True)
    real = pc_mod.PrefixCache.register

    def with_the_partial_page(cache, hashes, table, n_full, start=0):
        done = real(cache, hashes, table, n_full, start)
        owner = next(r for r in eng.requests.values() if r.table is table)
        P = cache.page_size
        if owner.n_cached % P and len(table) > n_full:
            h = block_hash(hashes[n_full - 1] if n_full else b"", owner.tokens[n_full * P:owner.n_cached])
            cache.page_of.setdefault(h, table[n_full])
            cache.hash_of.setdefault(table[n_full], h)
        return done
    monkeypatch.setattr(pc_mod.PrefixCache, "register", with_the_partial_page)
    for p, a in [(SYSTEM + [5, 6], 0), (SYSTEM + [5, 6, 1, 1, 1], 9)]:
        eng.add_request(p, 3, arrival=a)
    with pytest.raises(RuntimeError, match="refusing to write pages .* cached"):
        eng.run()


def test_mutation_a_hit_covering_every_token_is_caught(monkeypatch):
    """A lookup that may cover the whole prompt leaves no token to run for the first new
    token's logits."""
    def greedy_lookup(self, hashes, n_tokens):
        pages = []
        for h in hashes:
            if h not in self.page_of:
                break
            pages.append(self.page_of[h])
        return pages
    monkeypatch.setattr(pc_mod.PrefixCache, "lookup", greedy_lookup)
    eng = Engine(MODEL, num_pages=24, page_size=4, token_budget=16, share_prefixes=False, prefix_cache=True)
    reqs = {eng.add_request(SYSTEM, 3, arrival=0): (SYSTEM, 3), eng.add_request(SYSTEM, 2, arrival=9): (SYSTEM, 2)}
    with pytest.raises(ValueError, match="n_pending=0"):
        assert max_logit_error(eng, reqs) < TOL


# ---- the radix model and its eviction rule --------------------------------------------------

def test_evict_lru_leaves_first_and_parents_as_they_empty():
    #      0 (t=5) -- 1 (t=5) -- 2 (t=3)
    #                        \- 3 (t=4, in use)
    #      4 (t=1)
    parent = [-1, 0, 1, 1, -1]
    tokens = [10, 4, 2, 3, 7]
    last = [5, 5, 3, 4, 1]
    in_use = [False, True, False, True, False]  # 3 is in use, so is its path (1)
    assert evict_lru(parent, tokens, last, in_use, 0) == []
    assert evict_lru(parent, tokens, last, in_use, 1) == [4]
    assert evict_lru(parent, tokens, last, in_use, 8) == [4, 2]
    assert evict_lru(parent, tokens, last, in_use, 10 ** 6) == [4, 2]  # 1 and 3 are in use; 0 keeps child 1
    free = [False] * 5
    assert evict_lru(parent, tokens, last, free, 10 ** 6) == [4, 2, 3, 1, 0]
    assert evict_lru(parent, tokens, [1, 1, 1, 1, 1], free, 10 ** 6) == [2, 3, 1, 0, 4]  # ties: smaller index
    with pytest.raises(ValueError):
        evict_lru([-1, 5], [1, 1], [0, 0], [False, False], 1)


def test_radix_tree_matches_tokens_and_whole_pages():
    t = RadixTree(page_size=1)
    t.insert([1, 2, 3, 4, 5])
    assert t.match([1, 2, 3, 9])[0] == 3 and t.size == 5
    t.insert([1, 2, 3, 9, 9])  # splits the first node after 3 tokens
    assert t.size == 7 and t.match([1, 2, 3, 9, 9, 1])[0] == 5
    p = RadixTree(page_size=4)
    p.insert([1, 2, 3, 4, 5, 6, 7])  # 7 tokens: one full page is stored
    assert p.size == 4 and p.match([1, 2, 3, 4, 5, 6, 7, 8])[0] == 4


def test_radix_model_agrees_with_the_engine_on_full_pages_and_beats_it_by_less_than_a_page():
    """Replaying the engine's admissions and releases: a radix tree cut to whole pages
    finds the engine's hits; at page size 1 it finds more, by at most P - 1 per admission."""
    P = 16
    eng = Engine(MODEL.cfg, num_pages=400, page_size=P, token_budget=4096, compute=False, share_prefixes=False,
                 prefix_cache=True, record_tables=False)
    stream = shared_prompt_stream(12, 100, 96, follower_arrival=40, spacing=3, seed=7, max_new=6)
    submit(eng, stream)
    eng.run()
    events = eng.cache_events()
    engine_hits = sum(r.cache_hit_tokens for r in eng.requests.values())
    paged, tokenwise = replay(events, 400 * P, P), replay(events, 400 * P, 1)
    admissions = sum(kind == "admit" for _, kind, _, _ in events)
    assert paged["hit_tokens"] == engine_hits > 0
    assert 0 < tokenwise["hit_tokens"] - engine_hits <= (P - 1) * admissions
    assert tokenwise["hit_rate"] > paged["hit_rate"]


def test_radix_replay_evicts_under_a_small_capacity():
    stream = shared_prompt_stream(12, 100, 96, follower_arrival=40, spacing=3, seed=7, max_new=6)
    eng = Engine(MODEL.cfg, num_pages=400, page_size=16, token_budget=4096, compute=False, share_prefixes=False,
                 prefix_cache=True, record_tables=False)
    submit(eng, stream)
    eng.run()
    big, small = replay(eng.cache_events(), 10 ** 6, 1), replay(eng.cache_events(), 40, 1)
    assert big["evicted_tokens"] == 0 and small["evicted_tokens"] > 0 and small["hit_rate"] < big["hit_rate"]
    with pytest.raises(ValueError, match="event kind"):
        replay([(0, "drop", "x", [1])], 10, 1)


def test_engine_runs_are_deterministic_with_the_cache():
    runs = []
    for _ in range(2):
        eng, reqs = late_followers(num_pages=7)
        max_logit_error(eng, reqs)
        runs.append([(r.hits, r.tables, r.pages_cached) for r in eng.trace])
    assert runs[0] == runs[1]
    assert np.isfinite(eng.results()["r2"].logits).all()
