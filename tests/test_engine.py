"""The engine's invariant and its parts (mlacourse.engine).

Invariant: decoding every request through the engine -- any arrival order, page size
1..256, any token budget and prefill cap, shared prefixes, the prefix cache across time
(with eviction), preemption by recompute or by swap, greedy or seeded top-p sampling,
stop tokens and stop strings -- gives the same tokens and logits (float64, 1e-10) as
that request alone through mla_forward (reference_generate). The mutation tests check
that this comparison can fail: a corrupted page, an ignored block table or a skipped
copy-on-write breaks it (tests/test_engine_cache.py and test_engine_finish.py hold the
mutations of the prefix cache, sampling, stops, swap and the prefill cap)."""
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlacourse import flops, paged
from mlacourse.engine import (GREEDY, Engine, ModelConfig, OutOfPages, SamplingParams, append_slots, chunk_path,
                              init_model, longest_shared_prefix, pages_for_requests, pages_needed, paged_slack,
                              reference_generate, release, Scheduler, share_prefix, step_attention_flops)
from mlacourse.engine import pages as pages_mod

MODEL = init_model(ModelConfig(), seed=0)
VOCAB = MODEL.cfg.vocab
TOL = 1e-10


@lru_cache(maxsize=None)
def reference(prompt: tuple, max_new: int, sampling: SamplingParams = GREEDY):
    return reference_generate(MODEL, list(prompt), max_new, sampling=sampling)


def max_logit_error(engine, prompts):
    """Largest |engine - reference| over every request's logits; asserts tokens match.
    prompts: rid -> (prompt, max_new_tokens[, sampling])."""
    res = engine.run()
    worst = 0.0
    for rid, (prompt, max_new, *sampling) in prompts.items():
        ref_tokens, ref_logits = reference(tuple(prompt), max_new, *sampling)
        got = res[rid]
        assert got.logits.shape == ref_logits.shape, (rid, got.logits.shape, ref_logits.shape)
        assert np.all(np.isfinite(got.logits)), f"{rid}: NaN/inf logits (a poisoned slot was read)"
        worst = max(worst, float(np.abs(got.logits - ref_logits).max()))
        assert got.tokens == ref_tokens, f"{rid}: engine {got.tokens} vs alone {ref_tokens}"
    return worst


def check_bookkeeping(engine):
    """Every step: refcounts = tables holding the page, the budget and max_running held,
    the paths as chapter 4 picks them; at the end every page is free."""
    for rec in engine.trace:
        assert rec.tokens <= engine.token_budget
        if engine.max_running is not None:
            assert len(rec.seqlens) <= engine.max_running
        held = {}
        for rid, table in rec.tables.items():
            assert len(table) == pages_needed(rec.seqlens[rid], engine.pool.page_size), (rec.step, rid)
            for p in table:
                held[p] = held.get(p, 0) + 1
        assert rec.pages_in_use == len(held), (rec.step, rec.pages_in_use, held)
        for c in rec.chunks:
            want = "absorb" if c.kind == "decode" else flops.choose_path(c.n, c.n_ctx, **engine.path_shapes)
            assert c.path == want, c
    assert engine.pool.pages_in_use == 0 and not any(engine.pool.refcount)
    cached = list(engine.pool.cache.evictable) if engine.pool.cache else []
    assert sorted(engine.pool.free + cached) == list(range(engine.pool.num_pages))  # free or cached, once each
    if engine.pool.cache:
        assert set(engine.pool.cache.hash_of) == set(cached)  # nobody holds a page: every cached one is evictable


# ---- the invariant over random request streams ------------------------------------------

@st.composite
def samplings(draw):
    """Greedy, or top-p sampling with a seed; sometimes stop tokens or a stop string."""
    if draw(st.booleans()):
        params = dict(temperature=draw(st.sampled_from([0.5, 1.0, 2.0])), top_p=draw(st.sampled_from([0.3, 0.9, 1.0])),
                      seed=draw(st.integers(0, 2**31)))
    else:
        params = {}
    if draw(st.integers(0, 3)) == 0:
        params["stop_token_ids"] = tuple(draw(st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=12)))
    if draw(st.integers(0, 3)) == 0:
        params["stop"] = (draw(st.text(alphabet=" !abcdefgh", min_size=1, max_size=2)),)
    return SamplingParams(**params)


@st.composite
def streams(draw):
    # a third of the streams put the pool under pressure: several requests at once on just
    # enough pages for the largest one (preemption and eviction), pages of a few tokens so that
    # a request spans several and a running one can outgrow what is left; some spread arrivals
    # out (later requests find earlier ones finished: the prefix cache across time)
    pressure = draw(st.integers(0, 2)) == 0
    page = draw(st.integers(2, 16) if pressure else
                st.one_of(st.integers(1, 8), st.sampled_from([16, 32, 64, 256]), st.integers(1, 256)))
    on_full = draw(st.sampled_from(["swap", "preempt"]))
    late = not pressure and draw(st.integers(0, 2)) == 0
    n_req = draw(st.integers(3 if pressure else 1, 6))
    systems = [draw(st.lists(st.integers(0, VOCAB - 1), min_size=2, max_size=14)) for _ in range(2)]
    reqs = []
    for _ in range(n_req):
        kind = draw(st.sampled_from(["own", "system", "system", "copy"]))
        tail = draw(st.lists(st.integers(0, VOCAB - 1), min_size=0 if kind != "own" else 1, max_size=10))
        if kind == "system":
            prompt = systems[draw(st.integers(0, 1))] + tail
        elif kind == "copy" and reqs:
            prompt = list(reqs[draw(st.integers(0, len(reqs) - 1))][0])  # the same prompt again
        else:
            prompt = tail or [draw(st.integers(0, VOCAB - 1))]
        reqs.append((prompt, draw(st.integers(1, 8)), draw(st.integers(0, 24 if late else 4)), draw(samplings())))
    need = max(pages_needed(len(p) + m - 1, page) for p, m, _, _ in reqs)
    num_pages = need if pressure else draw(st.one_of(st.integers(need, need + 2), st.integers(need, need * n_req + 2)))
    return dict(page=page, reqs=reqs, num_pages=num_pages, budget=draw(st.integers(4 if pressure else 1, 40)),
                max_running=None if pressure else draw(st.one_of(st.none(), st.integers(1, 4))),
                share=draw(st.booleans()), cache=draw(st.booleans()),
                on_full=on_full, cap=draw(st.one_of(st.none(), st.integers(1, 12))))


def engine_for(s, model=MODEL, **kw):
    return Engine(model, num_pages=s["num_pages"], page_size=s["page"], token_budget=s["budget"],
                  max_running=s["max_running"], share_prefixes=s["share"], prefix_cache=s["cache"],
                  on_full=s["on_full"], prefill_cap=s["cap"], **kw)


@pytest.mark.smoke
@settings(max_examples=160, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(streams())
def test_engine_equals_each_request_alone(s):
    eng = engine_for(s)
    prompts = {}
    for prompt, max_new, arrival, sampling in s["reqs"]:
        prompts[eng.add_request(prompt, max_new, arrival=arrival, sampling=sampling)] = (prompt, max_new, sampling)
    assert max_logit_error(eng, prompts) < TOL
    check_bookkeeping(eng)


def test_random_streams_cover_sharing_copy_on_write_and_preemption():
    """The strategy above reaches the cases the invariant is about (not only easy streams):
    live sharing, copy-on-write, both kinds of preemption, chunks, the expand path, prefix
    cache hits, evictions, the prefill cap cutting a chunk, sampling, early stops."""
    seen = dict(shared=0, cow=0, recomputed=0, swapped=0, chunked=0, expand=0, hit=0, evicted=0, capped=0,
                sampled=0, stopped=0)

    @settings(max_examples=160, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(streams())
    def probe(s):
        eng = engine_for(s)
        for prompt, max_new, arrival, sampling in s["reqs"]:
            eng.add_request(prompt, max_new, arrival=arrival, sampling=sampling)
        res = eng.run()
        t = eng.trace
        seen["shared"] += any(n for r in t for _, n in r.admitted)
        seen["cow"] += any(r.copies for r in t)
        seen["recomputed"] += s["on_full"] == "preempt" and any(r.preempted for r in t)
        seen["swapped"] += any(d == "in" for r in t for _, d, _ in r.swaps)
        seen["chunked"] += any(c.kind == "prefill" and c.start > 0 for r in t for c in r.chunks)
        seen["expand"] += any(c.path == "expand" for r in t for c in r.chunks)
        seen["hit"] += any(r.hits for r in t)
        seen["evicted"] += bool(eng.pool.cache and eng.pool.cache.evictions)
        seen["capped"] += bool(s["cap"]) and any(c.kind == "prefill" and c.n == s["cap"] for r in t for c in r.chunks)
        seen["sampled"] += any(not sp.greedy for _, _, _, sp in s["reqs"])
        seen["stopped"] += any(x.finish_reason in ("stop_token", "stop_string") for x in res.values())

    probe()
    print(seen)
    assert all(v >= 5 for v in seen.values()), str(seen)


# ---- targeted cases --------------------------------------------------------------------

def run_alone_and_together(reqs, **kw):
    eng = Engine(MODEL, **kw)
    prompts = {}
    for prompt, max_new, arrival in reqs:
        prompts[eng.add_request(prompt, max_new, arrival=arrival)] = (prompt, max_new)
    err = max_logit_error(eng, prompts)
    check_bookkeeping(eng)
    return eng, err


def test_finish_on_a_page_boundary():
    # 6 prompt + 3 generated - 1 never cached = 8 cached tokens: exactly two pages of 4
    eng, err = run_alone_and_together([([5, 9, 2, 7, 1, 3], 3, 0)], num_pages=2, page_size=4, token_budget=16)
    assert err < TOL
    assert [r.seqlens.get("r0") for r in eng.trace] == [6, 7, None]  # the last step frees the pages
    assert max(r.pages_in_use for r in eng.trace[:-1]) == 2 and eng.trace[-1].pages_in_use == 0


def test_two_requests_share_a_prefix_then_diverge():
    system = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38]  # 10 tokens: two full pages of 4 and half a page
    a, b = system + [46, 26], system + [43, 38, 32]
    eng, err = run_alone_and_together([(a, 5, 0), (b, 5, 2)], num_pages=12, page_size=4, token_budget=16)
    assert err < TOL
    admitted_b = [n for r in eng.trace for rid, n in r.admitted if rid == "r1"]
    assert admitted_b == [10]
    step_b = next(r for r in eng.trace if ("r1", 10) in r.admitted)
    assert step_b.tables["r0"][:2] == step_b.tables["r1"][:2]  # the full pages are shared
    assert step_b.tables["r0"][2] != step_b.tables["r1"][2]  # the half page was copied on write
    assert [c[0] for c in step_b.copies] == ["r1"] and step_b.copies[0][3] == 2  # 2 valid slots copied
    assert step_b.chunks[-1].start == 10 and step_b.chunks[-1].n == 3  # only the new tokens are computed


def test_identical_prompts_share_all_but_the_last_token():
    p = [7, 7, 1, 2, 3, 4, 5]
    eng, err = run_alone_and_together([(p, 3, 0), (p, 4, 1)], num_pages=10, page_size=2, token_budget=8)
    assert err < TOL
    assert [n for r in eng.trace for rid, n in r.admitted if rid == "r1"] == [6]


def test_pool_exhaustion_is_an_error_when_asked():
    reqs = [([1, 2, 3, 4], 9, 0), ([5, 6, 7, 8], 9, 0)]  # each grows to 12 tokens = 3 pages of 4
    eng = Engine(MODEL, num_pages=4, page_size=4, token_budget=16, on_full="error")
    for p, m, a in reqs:
        eng.add_request(p, m, arrival=a)
    with pytest.raises(OutOfPages, match="cannot grow.*on_full='preempt'"):
        eng.run()


def test_pool_exhaustion_preempts_and_recomputes():
    reqs = [([1, 2, 3, 4], 9, 0), ([5, 6, 7, 8], 9, 0), ([9, 10, 11], 6, 1)]
    eng, err = run_alone_and_together(reqs, num_pages=4, page_size=4, token_budget=16)
    assert err < TOL
    assert any(r.preempted for r in eng.trace)
    res = eng.results()
    assert res["r1"].preemptions >= 1 and res["r0"].preemptions == 0  # the later arrival gives way


def test_request_states_change_only_through_their_methods():
    """A preempted request goes running -> waiting -> running again; every step's states agree
    with the trace; a change from the wrong state is refused (the engine's own bookkeeping bug
    would surface here, not as a silently wrong schedule)."""
    from mlacourse.engine import Request, RequestState
    reqs = [([1, 2, 3, 4], 9, 0), ([5, 6, 7, 8], 9, 0), ([9, 10, 11], 6, 3)]
    eng = Engine(MODEL, num_pages=4, page_size=4, token_budget=16)
    for p, n, a in reqs:
        eng.add_request(p, n, arrival=a)
    assert {r.state for r in eng.requests.values()} == {RequestState.FUTURE}
    history = {rid: [] for rid in eng.requests}
    while (rec := eng.step()) is not None:
        for rid, r in eng.requests.items():
            if not history[rid] or history[rid][-1] is not r.state:
                history[rid].append(r.state)
            assert (r.state is RequestState.RUNNING) == (rid in rec.seqlens), (rec.step, rid, r.state)
            assert (r.state is RequestState.FINISHED) == (r.finish_step is not None)
    W, R, F = RequestState.WAITING, RequestState.RUNNING, RequestState.FINISHED
    assert all(h[-1] is F for h in history.values())
    assert history["r1"] == [R, W, R, F] and eng.requests["r1"].preemptions == 1, history  # preempted, then back
    assert history["r0"] == [R, F] and history["r2"][0] is RequestState.FUTURE, history
    r = Request("x", [1], 1)
    for wrong in (lambda: r.admit([], 0), r.preempt, lambda: r.finish(0)):
        with pytest.raises(RuntimeError, match="cannot become .* from future"):
            wrong()
    r.arrive()
    with pytest.raises(RuntimeError, match="cannot become waiting from waiting"):
        r.arrive()
    r.admit([0], 0)
    r.finish(5)
    assert (r.state, r.finish_step, str(r.state)) == (F, 5, "finished")


def test_a_request_that_can_never_fit_is_refused_up_front():
    eng = Engine(MODEL, num_pages=2, page_size=4, token_budget=8)
    with pytest.raises(ValueError, match="pool has only 2 pages"):
        eng.add_request([1] * 8, 2)  # 9 cached tokens = 3 pages


def test_budget_one_token_per_step_and_page_size_one():
    reqs = [([4, 8, 15], 3, 0), ([16, 23], 2, 0), ([42], 3, 1)]
    eng, err = run_alone_and_together(reqs, num_pages=12, page_size=1, token_budget=1)
    assert err < TOL
    assert all(r.tokens == 1 for r in eng.trace)


def test_page_size_256_and_long_prompt_chunked():
    prompt = [int(t) for t in np.random.default_rng(5).integers(0, VOCAB, 300)]
    eng, err = run_alone_and_together([(prompt, 4, 0), (prompt[:40] + [1, 2], 3, 1)],
                                      num_pages=4, page_size=256, token_budget=64)
    assert err < TOL
    kinds = {(c.rid, c.kind, c.path) for r in eng.trace for c in r.chunks}
    assert ("r0", "prefill", "expand") in kinds and ("r0", "decode", "absorb") in kinds


def test_bad_input_is_refused_clearly():
    eng = Engine(MODEL, num_pages=4, page_size=4, token_budget=8)
    with pytest.raises(ValueError, match="token ids must be in 0..95"):
        eng.add_request([1, 96], 2)
    with pytest.raises(ValueError, match="at least one token"):
        eng.add_request([], 2)
    with pytest.raises(ValueError, match="max_new_tokens must be >= 1"):
        eng.add_request([1], 0)
    eng.add_request([1], 1, rid="x")
    with pytest.raises(ValueError, match="already used"):
        eng.add_request([1], 1, rid="x")
    with pytest.raises(ValueError, match="token_budget"):
        Engine(MODEL, num_pages=4, page_size=4, token_budget=0)
    with pytest.raises(ValueError, match="on_full"):
        Engine(MODEL, num_pages=4, page_size=4, token_budget=4, on_full="drop")
    from kernels.engine_adapter import kernel_backend  # imports without torch: the shape check comes first
    with pytest.raises(ValueError, match="576-wide rows"):
        Engine(MODEL, num_pages=4, page_size=16, token_budget=4, decode_backend=kernel_backend())
    with pytest.raises(ValueError, match="from kernels.engine_adapter import kernel_backend"):
        Engine(MODEL, num_pages=4, page_size=16, token_budget=4, decode_backend="kernel")


def test_schedule_only_run_matches_the_computing_run():
    """compute=False (used by the chapter for long streams) makes the same schedule."""
    rng = np.random.default_rng(2)
    reqs = [([int(t) for t in rng.integers(0, VOCAB, int(rng.integers(1, 30)))], int(rng.integers(1, 9)), i // 2)
            for i in range(8)]
    traces = []
    for compute in (True, False):
        eng = Engine(MODEL if compute else MODEL.cfg, num_pages=14, page_size=4, token_budget=12,
                     share_prefixes=False, compute=compute)
        for p, m, a in reqs:
            eng.add_request(p, m, arrival=a)
        eng.run()
        traces.append([(r.chunks, r.preempted, r.finished, r.tables) for r in eng.trace])
    assert traces[0] == traces[1]


# ---- the comparison can fail (mutation tests) --------------------------------------------

STREAM = [([3, 14, 15, 92, 65, 35, 89, 79, 32, 38], 6, 0), ([3, 14, 15, 92, 65, 35, 89, 11, 5, 6], 6, 1),
          ([27, 18, 28], 5, 1)]


def _mutant_error(**kw):
    eng = Engine(MODEL, num_pages=16, page_size=4, token_budget=8, **kw)
    prompts = {eng.add_request(p, m, arrival=a): (p, m) for p, m, a in STREAM}
    return eng, prompts


def test_mutation_baseline_passes():
    eng, prompts = _mutant_error()
    assert max_logit_error(eng, prompts) < TOL


def test_mutation_corrupted_page_breaks_the_invariant():
    eng, prompts = _mutant_error()
    for _ in range(3):
        eng.step()
    victim = eng.requests["r0"].table[0]
    eng.pool.data[:, victim, 1] += 1e-3  # one cached row of one page, all layers
    with pytest.raises(AssertionError):
        assert max_logit_error(eng, prompts) < TOL


def test_mutation_ignoring_the_block_table_breaks_the_invariant(monkeypatch):
    def read_contiguous(self, layer, table, n):  # pretend a request's pages are 0, 1, 2, ...
        return self.data[layer].reshape(-1, self.d_cache)[:n]
    monkeypatch.setattr(pages_mod.PagePool, "read", read_contiguous)
    eng, prompts = _mutant_error()
    with pytest.raises(AssertionError):
        assert max_logit_error(eng, prompts) < TOL


def test_mutation_skipping_copy_on_write_is_caught(monkeypatch):
    """An allocator that shares the half page but never copies it: the pool refuses the
    write instead of changing the other request's cache; with that guard removed too,
    the invariant breaks."""
    real = pages_mod.append_slots

    def no_cow(table, seqlen, n_new, page_size, refcount, free):
        shared = seqlen % page_size and refcount[table[-1]] > 1
        if not shared:
            return real(table, seqlen, n_new, page_size, refcount, free)
        last, saved = table[-1], refcount[table[-1]]
        refcount[last] = 1  # hide the sharing from the real allocator: it makes no copy
        try:
            return real(table, seqlen, n_new, page_size, refcount, free)
        finally:
            refcount[last] = saved

    monkeypatch.setattr(pages_mod, "append_slots", no_cow)
    eng, prompts = _mutant_error()
    with pytest.raises(RuntimeError, match="refusing to write pages"):
        eng.run()

    def write_anyway(self, layer, table, start, rows):
        pos = np.arange(start, start + len(rows))
        self.data[layer, np.asarray(table)[pos // self.page_size], pos % self.page_size, 0] = rows
    monkeypatch.setattr(pages_mod.PagePool, "write", write_anyway)
    eng, prompts = _mutant_error()
    with pytest.raises(AssertionError):
        assert max_logit_error(eng, prompts) < TOL


def test_mutation_sharing_one_token_too_many_breaks_the_invariant(monkeypatch):
    real = pages_mod.longest_shared_prefix
    monkeypatch.setattr("mlacourse.engine.core.longest_shared_prefix",
                        lambda tokens, cached: (lambda i, n: (i, n + 1 if i is not None else n))(*real(tokens, cached)))
    eng, prompts = _mutant_error()
    with pytest.raises(AssertionError):
        assert max_logit_error(eng, prompts) < TOL


# ---- the allocator (reference logic for a practice problem) --------------------------------

def fresh(num_pages):
    return [0] * num_pages, list(range(num_pages - 1, -1, -1))


def test_append_slots_allocates_in_order_and_exactly():
    refcount, free = fresh(6)
    table = []
    assert append_slots(table, 0, 5, 4, refcount, free) == []
    assert table == [0, 1] and refcount[:2] == [1, 1] and free == [5, 4, 3, 2]
    assert append_slots(table, 5, 3, 4, refcount, free) == [] and table == [0, 1]  # fills page 1 exactly
    assert append_slots(table, 8, 0, 4, refcount, free) == [] and table == [0, 1]
    assert append_slots(table, 8, 1, 4, refcount, free) == [] and table == [0, 1, 2]


def test_copy_on_write_only_for_a_shared_partial_last_page():
    refcount, free = fresh(8)
    a = []
    append_slots(a, 0, 6, 4, refcount, free)  # a = [0, 1], page 1 half full
    b = share_prefix(a, 6, 4, refcount)
    assert b == [0, 1] and refcount[:2] == [2, 2]
    copies = append_slots(b, 6, 1, 4, refcount, free)
    assert copies == [(1, 2, 2)] and b == [0, 2] and refcount[:3] == [2, 1, 1]
    assert append_slots(a, 6, 1, 4, refcount, free) == []  # a now holds page 1 alone: write in place
    c = share_prefix(a, 8, 4, refcount)  # a full last page is shared without a copy
    assert append_slots(c, 8, 1, 4, refcount, free) == [] and c[:2] == a[:2] and len(c) == 3


def test_out_of_pages_changes_nothing():
    refcount, free = fresh(3)
    a = []
    append_slots(a, 0, 3, 2, refcount, free)  # [0, 1]
    b = share_prefix(a, 3, 2, refcount)
    before = (list(a), list(b), list(refcount), list(free))
    with pytest.raises(OutOfPages, match="need 2 free pages .1 new, 1 copy-on-write"):
        append_slots(b, 3, 2, 2, refcount, free)
    assert (a, b, refcount, free) == before[:2] + before[2:]


def test_release_frees_only_unshared_pages():
    refcount, free = fresh(4)
    a = []
    append_slots(a, 0, 4, 2, refcount, free)
    b = share_prefix(a, 3, 2, refcount)
    assert release(a, refcount, free) == [] and a == []
    assert release(b, refcount, free) == [0, 1] and refcount == [0] * 4 and sorted(free) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="released twice"):
        release([0], refcount, free)


def test_allocator_rejects_a_table_of_the_wrong_length():
    refcount, free = fresh(4)
    with pytest.raises(ValueError, match="has 1 pages, got 0"):
        append_slots([], 3, 1, 4, refcount, free)


def test_page_count_formulas():
    assert pages_needed(0, 4) == 0 and pages_needed(4, 4) == 1 and pages_needed(5, 4) == 2
    # 3 requests of 13, 17, 20 tokens sharing 10 at page size 4: 4+5+5 pages minus 2*2 shared
    assert pages_for_requests([13, 17, 20], 4, shared_len=10) == 10
    assert pages_for_requests([13, 17, 20], 4) == 14
    assert paged_slack([13, 17, 20], 4) == 3 + 3 + 0
    # one source of truth: the engine uses chapter 1's formulas, not copies of them
    assert pages_needed is paged.pages_needed and paged_slack is paged.paged_slack
    assert pages_mod.pages_needed is paged.pages_needed
    assert longest_shared_prefix([1, 2, 3], [[1, 2], [1, 2, 3, 4], [9]]) == (1, 3)
    assert longest_shared_prefix([1], [[2]]) == (None, 0)


# ---- the scheduler (reference logic for a practice problem) --------------------------------

def test_scheduler_plans_decodes_first_then_prefills_then_admissions():
    running = [("a", 30, False), ("b", 1, True), ("c", 1, True)]
    waiting = [("d", 50), ("e", 5)]
    assert Scheduler(40).plan(running, waiting) == [("b", 1), ("c", 1), ("a", 30), ("d", 8)]
    assert Scheduler(100).plan(running, waiting) == [("b", 1), ("c", 1), ("a", 30), ("d", 50), ("e", 5)]
    assert Scheduler(1).plan(running, waiting) == [("b", 1)]
    assert Scheduler(100, max_running=4).plan(running, waiting) == [("b", 1), ("c", 1), ("a", 30), ("d", 50)]
    assert Scheduler(100, max_running=3).plan(running, waiting) == [("b", 1), ("c", 1), ("a", 30)]
    assert Scheduler(5).plan([], []) == []


def test_scheduler_rejects_bad_input():
    with pytest.raises(ValueError, match="token_budget"):
        Scheduler(0)
    with pytest.raises(ValueError, match="max_running"):
        Scheduler(4, max_running=0)
    with pytest.raises(ValueError, match="token_budget"):
        Engine(MODEL, num_pages=8, page_size=4, token_budget=0)  # the engine's limits are the scheduler's
    with pytest.raises(ValueError, match="is_decode"):
        Scheduler(4).plan([("a", 2, True)], [])
    with pytest.raises(ValueError, match="at least 1"):
        Scheduler(4).plan([], [("a", 0)])


# ---- FLOP accounting -----------------------------------------------------------------------

def test_step_flops_per_chunk_choice_is_never_worse():
    eng = Engine(ModelConfig(), num_pages=200, page_size=64, token_budget=512, compute=False,
                 path_shapes=flops.V3_SHAPES)
    rng = np.random.default_rng(0)
    for i in range(12):
        eng.add_request([int(t) for t in rng.integers(0, VOCAB, int(rng.integers(1, 1500)))], 20, arrival=i)
    eng.run()
    V3 = flops.V3_SHAPES
    for rec in eng.trace:
        chosen = step_attention_flops(rec.chunks, V3)
        assert chosen <= min(step_attention_flops(rec.chunks, V3, "absorb"),
                             step_attention_flops(rec.chunks, V3, "expand")) or any(
            c.kind == "decode" for c in rec.chunks)
        for c in rec.chunks:
            f = flops.attention_flops(c.n, c.n_ctx, **V3)
            assert chunk_path(c, V3) == c.path
            if c.kind == "prefill":
                assert f[c.path] == min(f.values())
    with pytest.raises(ValueError, match="policy"):
        chunk_path(eng.trace[0].chunks[0], V3, "fastest")
