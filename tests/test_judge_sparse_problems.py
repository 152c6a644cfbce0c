"""Problems 16, 17 and 18 (chapter 8) against the rules every spec keeps (grader/spec.py), in-process:

- on every seed the hidden cases repeat shapes and argument subsets with other values, and
  repeat an earlier call after a different one, so an attempt that caches its answer by
  shapes or by any one argument fails;
- the case generator only produces inputs the statement allows: the reference answers
  every case of many seeds;
- the model answers (solutions/) pass on many seeds."""
from __future__ import annotations

import copy
import importlib

import numpy as np
import pytest

from grader import runner

PROBLEMS = {p.number: p for p in runner.discover() if p.number in (16, 17, 18)}


def _key(v):
    return (v.shape, v.dtype.str, v.tobytes()) if isinstance(v, np.ndarray) else repr(v)


def _shape_key(args):
    return tuple((k, v.shape) if isinstance(v, np.ndarray) else (k, repr(v)) for k, v in sorted(args.items()))


def _memo_attempt(reference, key_of):
    """An attempt that remembers its first answer for each key_of(args)."""
    seen = {}

    def attempt(**args):
        k = key_of(args)
        if k not in seen:
            seen[k] = reference(**args)
        return seen[k]
    return attempt


def _grade_in_order(problem, seed, attempt):
    """Run the cases in the judge's order through one attempt (one process, like the child);
    True when every case passes."""
    ok = True
    for c in problem.make_cases(seed):
        got = attempt(**copy.deepcopy(c.args))
        ok &= problem.check(c, got).passed
    return ok


@pytest.mark.parametrize("number", [16, 17, 18])
def test_hidden_cases_hold_twins_and_a_repeat(number):
    p = PROBLEMS[number]
    for seed in range(6):
        hidden = [c for c in p.make_cases(seed) if c.hidden]
        shapes = [_shape_key(c.args) for c in hidden]
        twins = [(a, b) for a in range(len(hidden)) for b in range(a + 1, len(hidden))
                 if shapes[a] == shapes[b] and any(_key(hidden[a].args[k]) != _key(hidden[b].args[k])
                                                   for k in hidden[a].args)]
        assert twins, f"problem {number} seed {seed}: no two hidden cases share shapes with other values"
        last = hidden[-1]
        earlier = [i for i, c in enumerate(hidden[:-1]) if all(_key(c.args[k]) == _key(last.args[k]) for k in c.args)]
        assert earlier and earlier[0] < len(hidden) - 2, f"problem {number} seed {seed}: no repeat after another call"
        for name in hidden[0].args:  # each argument alone is shared by two hidden cases whose answers differ
            if not isinstance(hidden[0].args[name], np.ndarray):
                continue
            pairs = [(a, b) for a, b in twins if _key(hidden[a].args[name]) == _key(hidden[b].args[name])]
            assert pairs, f"problem {number} seed {seed}: no two cases share {name} with other values elsewhere"


@pytest.mark.parametrize("number", [16, 17, 18])
def test_memoising_attempts_fail_on_every_seed(number):
    p = PROBLEMS[number]
    ref = p.reference[p.functions[0]]
    keys = {"shapes": _shape_key}
    keys |= {f"only {name}": (lambda name: lambda a: _key(a[name]))(name)
             for name, v in p.make_cases(0)[0].args.items() if isinstance(v, np.ndarray)}
    for what, key_of in keys.items():
        for seed in range(4):
            assert not _grade_in_order(p, seed, _memo_attempt(ref, key_of)), \
                f"problem {number}: an attempt caching by {what} passes seed {seed}"


# (problem 17 on 1,000 seeds: tests/test_judge_sweeps.py's reference sweep, in CI)
@pytest.mark.parametrize("number, seeds", [(16, 2000), (17, 150), (18, 300)])
def test_generator_makes_only_allowed_inputs(number, seeds):
    """The reference (which rejects what the statement forbids) answers every case."""
    p = PROBLEMS[number]
    ref = p.reference[p.functions[0]]
    for seed in range(seeds):
        for c in p.make_cases(seed):
            ref(**copy.deepcopy(c.args))


@pytest.mark.parametrize("number, seeds", [(16, 300), (17, 60), (18, 100)])
def test_model_answer_passes_many_seeds(number, seeds):
    p = PROBLEMS[number]
    sol = getattr(importlib.import_module(f"solutions.{p.filename[:-3]}"), p.functions[0])
    for seed in range(seeds):
        assert _grade_in_order(p, seed, sol), f"problem {number}: the model answer fails seed {seed}"


@pytest.mark.parametrize("number", [16, 17, 18])
def test_every_edge_is_in_the_hidden_cases_of_every_seed(number):
    """A situation the statement promises is in every seed's HIDDEN cases (seeds 0-49),
    so an attempt that passes the public cases alone cannot skip it."""
    p = PROBLEMS[number]
    for seed in range(50):
        hidden = [c for c in p.make_cases(seed) if c.hidden]
        for e in p.edges:
            assert any(e.holds(c.args) for c in hidden), f"problem {number} seed {seed}: no hidden case has {e.name}"
