"""What a request needs to finish (mlacourse.engine.sampling, the engine's stops, swap and
prefill cap): targeted cases with expectations worked out by hand, and mutations of each
part that the invariant (each request equals itself alone) must catch."""
import numpy as np
import pytest

from mlacourse.engine import Engine, SamplingParams, detokenize, reference_generate, sample, schedule_step, stop_reason
from mlacourse.engine import core as core_mod
from mlacourse.engine import sampling as sampling_mod
from mlacourse.engine.sampling import TEXT_ALPHABET, top_p_probabilities
from tests.test_engine import MODEL, TOL, check_bookkeeping, max_logit_error

SEEDED = SamplingParams(temperature=1.0, top_p=0.9, seed=1234)


# ---- sampling ----------------------------------------------------------------------------

def test_top_p_keeps_the_smallest_set_reaching_p():
    z = np.log(np.array([0.1, 0.4, 0.3, 0.2]))  # probabilities 0.1 0.4 0.3 0.2 at T = 1
    ids, p = top_p_probabilities(z, 1.0, 0.7)
    assert list(ids) == [1, 2] and np.allclose(p, [4 / 7, 3 / 7])  # 0.4 + 0.3 reaches 0.7
    ids, p = top_p_probabilities(z, 1.0, 0.71)
    assert list(ids) == [1, 2, 3]
    ids, p = top_p_probabilities(z, 1.0, 1.0)
    assert list(ids) == [1, 2, 3, 0] and np.isclose(p.sum(), 1)
    ids, _ = top_p_probabilities(z, 1e-3, 0.5)  # a low temperature sharpens to the argmax
    assert list(ids) == [1]


def test_sampling_follows_the_probabilities_and_the_seed():
    z = np.log(np.array([0.1, 0.4, 0.3, 0.2]))
    params = SamplingParams(temperature=1.0, seed=7)
    rng = params.generator()
    draws = [sample(z, params, rng) for _ in range(20000)]
    freq = np.bincount(draws, minlength=4) / len(draws)
    assert np.abs(freq - [0.1, 0.4, 0.3, 0.2]).max() < 0.015
    again = params.generator()
    assert [sample(z, params, again) for _ in range(50)] == draws[:50]  # the seed fixes the sequence
    assert sample(z, SamplingParams(), None) == 1  # greedy draws nothing


def test_sampling_params_refuse_bad_values():
    with pytest.raises(ValueError, match="needs a seed"):
        SamplingParams(temperature=0.7)
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0.0)
    with pytest.raises(ValueError, match="temperature"):
        SamplingParams(temperature=-1.0)
    with pytest.raises(ValueError, match="non-empty strings"):
        SamplingParams(stop=("",))
    with pytest.raises(ValueError, match="compute=False"):
        Engine(MODEL.cfg, num_pages=4, page_size=4, token_budget=4, compute=False).add_request([1], 2, sampling=SEEDED)


def test_stop_conditions():
    text_ids = [TEXT_ALPHABET.index(c) for c in "ab!c"]
    assert detokenize(text_ids) == "ab!c"
    p = SamplingParams(stop_token_ids=(5,), stop=("b!",))
    assert stop_reason([], p, 3) is None
    assert stop_reason([1, 5], p, 10) == "stop_token"
    assert stop_reason(text_ids[:2], p, 10) is None and stop_reason(text_ids[:3], p, 10) == "stop_string"
    assert stop_reason([1, 2, 3], p, 3) == "length"
    assert stop_reason([5, 2, 3], p, 3) == "length"  # only the latest token is checked for the stop id


def test_engine_stops_like_the_request_alone():
    prompt = [11, 42, 7, 7, 63, 20, 5, 81, 30]
    tokens, _ = reference_generate(MODEL, prompt, 12)
    stop_at = tokens[3]  # the 4th greedy token stops the request
    params = SamplingParams(stop_token_ids=(stop_at,))
    eng = Engine(MODEL, num_pages=16, page_size=4, token_budget=8)
    eng.add_request(prompt, 12, sampling=params, rid="a")
    eng.add_request(prompt, 12, rid="b")
    res = eng.run()
    assert res["a"].tokens == tokens[:tokens.index(stop_at) + 1] and res["a"].finish_reason == "stop_token"
    assert res["b"].tokens == tokens and res["b"].finish_reason == "length"
    text = detokenize(tokens)
    stop = text[5:7]
    eng = Engine(MODEL, num_pages=16, page_size=4, token_budget=8)
    eng.add_request(prompt, 12, sampling=SamplingParams(stop=(stop,)), rid="c")
    res = eng.run()
    assert res["c"].finish_reason == "stop_string" and res["c"].text == text[:text.index(stop)]
    assert res["c"].tokens == tokens[:text.index(stop) + len(stop)]
    check_bookkeeping(eng)


def test_sampled_requests_are_batch_invariant():
    """The same seeded request alone, next to others, and after a preemption: same tokens."""
    prompt = [4, 8, 15, 16, 23, 42, 1, 2, 3]
    alone, _ = reference_generate(MODEL, prompt, 10, sampling=SEEDED)
    greedy, _ = reference_generate(MODEL, prompt, 10)
    assert alone != greedy  # the test means something: sampling changed the tokens
    for kw in (dict(num_pages=32), dict(num_pages=5, on_full="preempt"), dict(num_pages=5, on_full="swap")):
        eng = Engine(MODEL, page_size=4, token_budget=8, **kw)
        prompts = {}
        for i, (p, sp) in enumerate([(prompt, SEEDED), ([9, 9, 9], SamplingParams(temperature=2.0, seed=3)),
                                     (prompt[:5], SEEDED)]):
            prompts[eng.add_request(p, 10, arrival=i, sampling=sp)] = (p, 10, sp)
        assert max_logit_error(eng, prompts) < TOL
        assert eng.results()["r0"].tokens == alone


# ---- swap and recompute ----------------------------------------------------------------------

REQS = [([1, 2, 3, 4], 9, 0), ([5, 6, 7, 8], 9, 0), ([9, 10, 11], 6, 1)]


def run_tight(on_full, **kw):
    eng = Engine(MODEL, num_pages=4, page_size=4, token_budget=16, on_full=on_full, **kw)
    prompts = {eng.add_request(p, m, arrival=a): (p, m) for p, m, a in REQS}
    return eng, prompts


def test_swap_moves_rows_instead_of_recomputing():
    eng, prompts = run_tight("swap")
    assert max_logit_error(eng, prompts) < TOL
    check_bookkeeping(eng)
    swaps = [s for r in eng.trace for s in r.swaps]
    outs = [(rid, n) for rid, d, n in swaps if d == "out"]
    ins = [(rid, n) for rid, d, n in swaps if d == "in"]
    assert outs and sorted(outs) == sorted(ins)  # every row that left came back, as many of them
    rec, prompts_r = run_tight("preempt")
    max_logit_error(rec, prompts_r)
    computed = {k: r.computed_tokens for k, r in eng.results().items()}
    recomputed = {k: r.computed_tokens for k, r in rec.results().items()}
    alone = {k: len(p) + m - 1 for k, (p, m) in prompts.items()}
    assert computed == alone  # swap computes every token exactly once
    assert sum(recomputed.values()) > sum(alone.values())  # recompute runs some twice


def test_mutation_swap_that_loses_the_rows_is_caught(monkeypatch):
    """Swapping back in without writing the saved rows: the pages hold NaN."""
    real = core_mod.Engine._admit

    def admit_forgetting_rows(self, r, n, sources, swaps, hits):
        r.swapped_rows = None
        return real(self, r, n, sources, swaps, hits)
    monkeypatch.setattr(core_mod.Engine, "_admit", admit_forgetting_rows)
    eng, prompts = run_tight("swap")
    with pytest.raises(AssertionError):
        assert max_logit_error(eng, prompts) < TOL


def test_mutation_swap_out_of_one_layer_only_is_caught(monkeypatch):
    """Saving layer 0's rows for every layer: layer 1 comes back wrong."""
    monkeypatch.setattr(core_mod.PagePool, "read_all_layers",
                        lambda self, table, n: np.stack([self.read(0, table, n)] * self.n_layers))
    eng, prompts = run_tight("swap")
    with pytest.raises(AssertionError):
        assert max_logit_error(eng, prompts) < TOL


# ---- stops and sampling, mutated ----------------------------------------------------------------

def test_mutation_ignoring_stop_conditions_is_caught(monkeypatch):
    monkeypatch.setattr(core_mod, "stop_reason",
                        lambda generated, params, max_new: "length" if len(generated) >= max_new else None)
    prompt = [11, 42, 7, 7, 63, 20, 5, 81, 30]
    tokens, _ = reference_generate(MODEL, prompt, 12)
    params = SamplingParams(stop_token_ids=(tokens[3],))
    eng = Engine(MODEL, num_pages=16, page_size=4, token_budget=8)
    prompts = {eng.add_request(prompt, 12, sampling=params): (prompt, 12, params)}
    with pytest.raises(AssertionError):
        max_logit_error(eng, prompts)


def test_mutation_one_generator_for_the_whole_batch_is_caught(monkeypatch):
    """Drawing every request's token from one shared generator makes a request's tokens
    depend on who else is in the batch."""
    shared = np.random.default_rng(0)
    monkeypatch.setattr(core_mod, "sample", lambda z, params, rng: sampling_mod.sample(z, params, shared if rng else None))
    eng = Engine(MODEL, num_pages=32, page_size=4, token_budget=16)
    prompts = {}
    for p in ([4, 8, 15, 16, 23], [42, 1, 2], [3, 3, 3, 3]):
        prompts[eng.add_request(p, 8, sampling=SEEDED)] = (p, 8, SEEDED)
    with pytest.raises(AssertionError):
        max_logit_error(eng, prompts)


# ---- the per-request prefill cap ------------------------------------------------------------------

def test_schedule_step_prefill_cap():
    running = [("a", 30, False), ("b", 1, True)]
    waiting = [("d", 50), ("e", 5)]
    assert schedule_step(running, waiting, 40, prefill_cap=8) == [("b", 1), ("a", 8), ("d", 8), ("e", 5)]
    assert schedule_step(running, waiting, 12, prefill_cap=8) == [("b", 1), ("a", 8), ("d", 3)]
    assert schedule_step(running, waiting, 40) == [("b", 1), ("a", 30), ("d", 9)]
    with pytest.raises(ValueError, match="prefill_cap"):
        schedule_step(running, waiting, 40, prefill_cap=0)


def test_prefill_cap_lets_a_short_prompt_start_beside_a_long_one():
    long_p, short_p = list(range(1, 61)), [7, 8, 9]

    def first_token_step(cap):
        eng = Engine(MODEL, num_pages=40, page_size=4, token_budget=32, prefill_cap=cap)
        prompts = {eng.add_request(long_p, 3, rid="long"): (long_p, 3), eng.add_request(short_p, 3, rid="short"): (short_p, 3)}
        assert max_logit_error(eng, prompts) < TOL
        assert all(c.n <= (cap or 32) for r in eng.trace for c in r.chunks)
        return eng.results()["short"].first_token_step
    assert first_token_step(None) == 1 and first_token_step(16) == 0  # without a cap the long prompt takes all 32


def test_mutation_a_cap_the_engine_ignores_is_caught(monkeypatch):
    real = core_mod.schedule_step
    monkeypatch.setattr(core_mod, "schedule_step", lambda r, w, b, m=None, cap=None: real(r, w, b, m))
    with pytest.raises(AssertionError):
        test_prefill_cap_lets_a_short_prompt_start_beside_a_long_one()
