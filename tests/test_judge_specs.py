"""Every problem spec, held to the judge's rules (in-process, fast):

- the reference passes every case, on several seeds;
- each named mistake's file (an entry of grader/problems/pNN_slug/mistakes.diff, expanded),
  graded as an attempt, fails on every seed, and the judge names THAT mistake -- not another
  one that happens to coincide on some case; every spec loads (its mistakes included);
- the hidden cases of one seed vary every parameter (so hard-coding a default fails on
  every seed), except what a spec declares fixed, with the reason;
- the situations a statement promises (an empty split, T = 1, one head, large scores, ...)
  occur among the HIDDEN cases of every seed;
- every kind of structural extreme (grader.spec.STRUCTURE: ids out of order, an empty tile
  first, rows hundreds apart, lengths past every budget, near-ties, ...) is declared for
  every problem: edges of that kind, which hold on every seed like the others, or the
  reason its statement allows none (grader/spec.py: "Structural extremes: the rule");
- problems that normalise per row (softmax, log-sum-exp merge: ``normalises_rows``) test
  rows near +750 and near -750 in one case, a row whose scores are hundreds apart with the
  largest last, and say "stable";
- an attempt that memoises its answer by the arguments' shapes, or by all arguments but
  one, fails on every seed (memo_twins);
- every statement says once that inputs are read-only (unless the contract allows
  changes in place, and then it says so).
"""
from __future__ import annotations

import copy
import inspect
import json

import numpy as np
import pytest

from grader import child, runner
from grader.records import CaseStatus

from grader.spec import INPUTS_RULE, STRUCTURE, UNEVEN_ROWS, WIDE_ROW

PROBLEMS = runner.discover()
SEEDS = [0, 1, 2]
EDGE_SEEDS = list(range(50)) + [12345]


def _plain(x):
    """The same data round trip a child's result goes through."""
    return child.decode(json.loads(json.dumps(child.encode(x))))


def _params(problems=PROBLEMS):
    out = []
    for p in problems:
        missing = runner.missing_requirements(p)
        out.append(pytest.param(p, id=p.slug, marks=pytest.mark.skipif(
            bool(missing), reason=f"needs {', '.join(missing)}")))
    return out


def _cases(problem, seed):
    return problem.make_cases(seed)


def simulate(problem, seed, impl: dict):
    """Grade, in-process, an attempt whose functions are `impl` (name -> callable; the
    reference for the others), with the records a child would send: an exception is an
    exception. Returns the outcomes after mistake naming."""
    outcomes = []
    for c in _cases(problem, seed):
        fn = impl.get(c.function, problem.reference[c.function])
        try:
            with np.errstate(all="ignore"):
                got = fn(**copy.deepcopy(c.args))
        except Exception as e:  # noqa: BLE001 -- the attempt raised: the judge says so
            outcomes.append(runner.grade_record(problem, c, {"status": child.RunStatus.ERROR, "message": repr(e)}))
            continue
        if got is None and c.function in impl and not _runs_file(problem, impl[c.function]):
            got = problem.reference[c.function](**copy.deepcopy(c.args))  # a model: the slip changes nothing here
        rec = {"status": child.RunStatus.OK, "result": json.loads(json.dumps(child.encode(got)))}
        outcomes.append(runner.grade_record(problem, c, rec, rec))  # as if the judge's kernel launch gave it too
    runner.explain_mistakes(problem, outcomes)
    return outcomes


def _runs_file(problem, fn) -> bool:
    return any(m.fn is fn and m.runs_file for m in problem.mistakes)


def test_every_spec_loads():
    """Each spec module imports and builds its PROBLEM (its named mistakes' files included)."""
    errors = []
    runner.discover(errors)
    assert errors == [], "\n".join(f"{e.module}: {e.message}" for e in errors)


@pytest.mark.parametrize("problem", _params())
def test_reference_passes_every_case(problem):
    for seed in SEEDS:
        for c in _cases(problem, seed):
            got = _plain(problem.reference[c.function](**copy.deepcopy(c.args)))
            v = problem.check(c, got)
            assert v.passed, f"{problem.slug} seed {seed}: the reference fails {c.name!r}: {v.message}"


@pytest.mark.parametrize("problem", _params([p for p in PROBLEMS if p.mistakes]))
def test_each_mistake_is_named_as_itself(problem):
    """The attempt that makes mistake m fails on every seed, and the verdict names m."""
    for m in problem.mistakes:
        fn = m.function or problem.functions[0]
        for seed in SEEDS:
            outs = simulate(problem, seed, {fn: m.fn})
            failing = [o for o in outs if o.status is CaseStatus.FAIL]
            assert failing, f"{problem.slug}: mistake {m.name!r} passes every case of seed {seed}"
            named = {o.mistake for o in failing}
            assert named == {m.message}, (
                f"{problem.slug} seed {seed}: the attempt making {m.name!r} was told "
                f"{named - {m.message} or 'nothing'}")


@pytest.mark.parametrize("problem", _params([p for p in PROBLEMS if p.mistakes]))
def test_no_mistake_is_named_for_an_unknown_slip(problem):
    """A wrong answer that no mistake explains (the reference plus a small offset on one
    hidden case) gets no 'Likely slip' line."""
    for seed in SEEDS[:1]:
        cases = _cases(problem, seed)
        target = next(c for c in cases if c.hidden and _perturbable(
            _plain(problem.reference[c.function](**copy.deepcopy(c.args)))))
        outcomes = []
        for c in cases:
            got = _plain(problem.reference[c.function](**copy.deepcopy(c.args)))
            if c is target:
                got = _perturb(got)
            rec = {"status": child.RunStatus.OK, "result": json.loads(json.dumps(child.encode(got)))}
            outcomes.append(runner.grade_record(problem, c, rec, rec))
        runner.explain_mistakes(problem, outcomes)
        bad = [o for o in outcomes if o.status is CaseStatus.FAIL]
        assert bad, f"{problem.slug}: a perturbed answer passed"
        assert all(o.mistake is None for o in bad), f"{problem.slug}: named {bad[0].mistake!r}"


def _perturbable(x) -> bool:
    """Has the answer a first number to change (an empty eviction list has none)?"""
    if isinstance(x, dict):
        return bool(x) and _perturbable(next(iter(x.values())))
    if isinstance(x, (tuple, list)):
        return bool(x) and _perturbable(x[0])
    return isinstance(x, str) or bool(np.isfinite(np.asarray(x, dtype=np.float64)).any())


def _perturb(x):
    if isinstance(x, dict):
        k = next(iter(x))
        return {**x, k: _perturb(x[k])}
    if isinstance(x, (tuple, list)):
        return type(x)([_perturb(x[0]), *x[1:]])
    if isinstance(x, str):
        return {"expand": "absorb", "absorb": "expand", "memory": "compute", "compute": "memory"}.get(x, x + "?")
    a = np.array(x, dtype=np.float64)
    flat = a.reshape(-1)
    finite = np.flatnonzero(np.isfinite(flat))
    flat[finite[0]] = flat[finite[0]] * 1.01 + 0.37
    return a if a.shape else float(a)


def _full_args(problem, case):
    """The case's arguments with the function's defaults filled in."""
    sig = inspect.signature(problem.reference[case.function])
    full = {k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}
    return {**full, **case.args}


def _values(problem, cases, name):
    """What a parameter takes across cases: scalars by value, arrays by shape and dtype."""
    scalars, shapes, dtypes = set(), [], set()
    for c in cases:
        v = _full_args(problem, c)[name]
        if hasattr(v, "shape") and getattr(v, "ndim", 0) > 0:
            shapes.append(tuple(v.shape))
            dtypes.add(str(v.dtype))
        else:
            scalars.add(repr(v))
    return scalars, shapes, dtypes


@pytest.mark.parametrize("problem", _params())
def test_hidden_cases_vary_every_parameter(problem):
    """Hard-coding a head dim, a page size, a dtype or a number of heads must fail on
    every seed: within one seed, each parameter (each axis of each array) takes at least
    two values among the hidden cases of its function."""
    for seed in SEEDS:
        cases = _cases(problem, seed)
        for fn in problem.functions:
            hidden = [c for c in cases if c.hidden and c.function == fn]
            assert len(hidden) >= 2, f"{problem.slug}: fewer than two hidden cases for {fn}"
            for name in _full_args(problem, hidden[0]):
                scalars, shapes, _ = _values(problem, hidden, name)
                if shapes:
                    ndim = len(shapes[0])
                    for axis in range(ndim):
                        key = f"{name}.axis{axis}"
                        sizes = {s[axis] for s in shapes if len(s) == ndim}
                        assert len(sizes) >= 2 or key in problem.fixed or name in problem.fixed, (
                            f"{problem.slug} seed {seed}: {fn}'s {key} is always {sizes}")
                else:
                    assert len(scalars) >= 2 or name in problem.fixed, (
                        f"{problem.slug} seed {seed}: {fn}'s {name} is always {scalars}")


@pytest.mark.parametrize("problem", _params())
def test_fixed_parameters_say_why(problem):
    for key, why in problem.fixed.items():
        assert isinstance(why, str) and len(why) > 15, f"{problem.slug}: say why {key} is fixed"


def hidden_only(cases):
    """The hidden cases, without the ones built for a memory cap (large, and not twinned)."""
    return [c for c in cases if c.hidden and c.memory_mb is None]


def edges_missing(problem, cases) -> list:
    """The edges of ``problem`` that no hidden case among ``cases`` holds (one seed's)."""
    hidden = [c for c in cases if c.hidden]
    missing = []
    for e in problem.edges:
        fns = [e.function] if e.function else problem.functions
        if not any(c.function in fns and e.holds(c.args) for c in hidden):
            missing.append(f"{e.name}" + (f" ({e.kind})" if e.kind else ""))
    return missing


@pytest.mark.parametrize("problem", _params([p for p in PROBLEMS if p.edges]))
def test_promised_situations_occur_on_every_seed(problem):
    """Every edge -- promised situations and structural extremes alike -- among the hidden
    cases of 51 seeds (1000 in tests/test_judge_sweeps.py's long sweep): an attempt that
    gets one wrong fails on every seed, not on the seeds that happened to draw it."""
    for seed in EDGE_SEEDS:
        missing = edges_missing(problem, _cases(problem, seed))
        assert not missing, f"{problem.slug} seed {seed}: no hidden case has {'; '.join(missing)}"


@pytest.mark.parametrize("problem", _params())
def test_every_structural_extreme_is_declared(problem):
    """The rule of structural extremes, for structure as the variety test is for parameters: for each
    kind of STRUCTURE the problem has edges of that kind (checked on every seed above) or
    says in no_structure why its statement allows no such extreme -- not both, and no kind
    the rule does not know."""
    kinds = {e.kind for e in problem.edges if e.kind is not None}
    assert kinds <= set(STRUCTURE), f"{problem.slug}: unknown edge kinds {sorted(kinds - set(STRUCTURE))}"
    assert set(problem.no_structure) <= set(STRUCTURE), (
        f"{problem.slug}: no_structure names unknown kinds {sorted(set(problem.no_structure) - set(STRUCTURE))}")
    both = kinds & set(problem.no_structure)
    assert not both, f"{problem.slug}: {sorted(both)} has edges and a reason why it has none"
    for kind, why in problem.no_structure.items():
        assert isinstance(why, str) and len(why) > 15, f"{problem.slug}: say why no {kind!r} extreme applies"
    left = [k for k in STRUCTURE if k not in kinds and k not in problem.no_structure]
    assert not left, (f"{problem.slug}: no edge of kind {left}, and no reason in no_structure why the "
                      f"statement allows none ({'; '.join(STRUCTURE[k] for k in left)})")


def test_the_structure_rule_can_fail():
    """The declaration test is not a formality: a problem that leaves a kind out, or
    declares an edge of a kind the rule does not know, is refused."""
    import dataclasses
    p = next(p for p in PROBLEMS if p.no_structure)
    kind = next(iter(p.no_structure))
    with pytest.raises(AssertionError, match="no edge of kind"):
        test_every_structural_extreme_is_declared(dataclasses.replace(
            p, no_structure={k: v for k, v in p.no_structure.items() if k != kind}))
    from grader.spec import Edge
    with pytest.raises(AssertionError, match="unknown edge kinds"):
        test_every_structural_extreme_is_declared(dataclasses.replace(
            p, edges=[*p.edges, Edge("x", lambda a: True, kind="sideways")]))


@pytest.mark.parametrize("problem", _params([p for p in PROBLEMS if p.normalises_rows]))
def test_row_normalising_problems_test_uneven_rows(problem):
    """A softmax or an lse merge per row: rows near +750 and -750 in one hidden case (so
    one maximum for the whole array fails), one row whose scores are hundreds apart with
    the largest last (so a maximum from the first tile, or the mean, fails), and the
    statement says to keep it stable."""
    assert any(e.name == UNEVEN_ROWS for e in problem.edges), (
        f"{problem.slug}: normalises_rows but no uneven_rows_edge among its edges")
    assert any(e.name == WIDE_ROW for e in problem.edges), (
        f"{problem.slug}: normalises_rows but no wide_row_edge (one row's scores hundreds apart)")
    assert "stable" in problem.statement, f"{problem.slug}: the statement must say to keep the softmax stable"


def test_row_normalising_problems_are_flagged():
    """Problems whose reference returns an lse, or whose statement asks for a softmax over
    the keys, set normalises_rows (so the uneven-rows rule cannot be forgotten)."""
    for p in PROBLEMS:
        text = p.statement.lower()
        asks = ("keep the softmax stable" in text or "keep every softmax stable" in text
                or "log-sum-exp" in text or "online softmax" in text)
        assert p.normalises_rows == asks, f"{p.slug}: normalises_rows={p.normalises_rows}, statement {asks}"


def test_every_statement_says_inputs_are_read_only():
    for p in PROBLEMS:
        if p.may_change_inputs:
            assert INPUTS_RULE not in p.statement and "in place" in p.statement, (
                f"{p.slug}: may change {sorted(p.may_change_inputs)} in place: its statement must say so")
            assert all(len(why) > 15 for why in p.may_change_inputs.values()), p.slug
        else:
            assert p.statement.count(INPUTS_RULE) == 1, f"{p.slug}: the read-only rule must appear once"


# ------------------------------------------------------------------ memoising attempts

def exact(v):
    """A hashable stand-in for an argument's exact value."""
    if isinstance(v, np.ndarray):
        return ("nd", v.shape, v.dtype.str, v.tobytes())
    return repr(v)


def size(v):
    """What a memo "by shapes" keys on: arrays by shape and dtype, lists by length,
    numbers and strings by value."""
    if isinstance(v, np.ndarray):
        return ("nd", v.shape, v.dtype.str)
    if isinstance(v, (list, tuple)):
        return ("len", len(v))
    return repr(v)


def memo(reference, key):
    cache = {}

    def attempt(**args):
        k = key(args)
        if k not in cache:
            cache[k] = reference(**copy.deepcopy(args))
        return copy.deepcopy(cache[k])
    return attempt


def fails_on_hidden(problem, seed, fn, attempt):
    """Does the attempt (for function fn) fail some hidden case of this seed? The hidden
    cases alone, in the judge's order: what memo_twins promises."""
    for c in hidden_only(_cases(problem, seed)):
        if c.function != fn:
            continue
        got = _plain(attempt(**copy.deepcopy(c.args)))
        if not problem.check(c, got).passed:
            return True
    return False


def arg_names(problem, fn, seed):
    return sorted({k for c in hidden_only(_cases(problem, seed)) if c.function == fn for k in c.args})


@pytest.mark.parametrize("problem", _params())
def test_memo_by_shapes_fails_on_every_seed(problem):
    """An attempt that caches its answer by the arguments' shapes (and scalar values)
    returns a stale answer on some hidden case of every seed. (Where every argument is a
    number or a string, that cache is keyed on the whole call: a correct memo.)"""
    for fn in problem.functions:
        for seed in SEEDS:
            if all(size(v) == exact(v) for c in hidden_only(_cases(problem, seed))
                   if c.function == fn for v in c.args.values()):
                continue
            attempt = memo(problem.reference[fn], lambda a: tuple(sorted((k, size(v)) for k, v in a.items())))
            assert fails_on_hidden(problem, seed, fn, attempt), (
                f"{problem.slug} seed {seed}: {fn} memoised by shapes passes every hidden case")


@pytest.mark.parametrize("problem", _params())
def test_memo_keyed_on_all_but_one_argument_fails_on_every_seed(problem):
    """For each argument a: an attempt whose cache key is every argument except a (exact
    values) fails on every seed -- unless the spec says why no twin can change a alone."""
    for fn in problem.functions:
        for seed in SEEDS:
            for a in arg_names(problem, fn, seed):
                if a in problem.no_twin or f"{fn}.{a}" in problem.no_twin:
                    continue
                key = (lambda drop: lambda args: tuple(sorted((k, exact(v)) for k, v in args.items() if k != drop)))(a)
                assert fails_on_hidden(problem, seed, fn, memo(problem.reference[fn], key)), (
                    f"{problem.slug} seed {seed}: {fn} memoised on every argument but {a} passes")


@pytest.mark.parametrize("problem", _params())
def test_no_twin_entries_say_why(problem):
    for key, why in problem.no_twin.items():
        fn, _, arg = key.rpartition(".")
        assert (not fn or fn in problem.functions) and isinstance(why, str) and len(why) > 15, (problem.slug, key)


@pytest.mark.parametrize("problem", _params())
def test_public_cases_do_not_depend_on_the_seed_and_hidden_ones_record_it(problem):
    a = [c for c in _cases(problem, 1) if not c.hidden]
    b = [c for c in _cases(problem, 2) if not c.hidden]
    assert [c.name for c in a] == [c.name for c in b]
    for x, y in zip(a, b):
        for k in x.args:
            u, v = np.asarray(x.args[k]), np.asarray(y.args[k])
            assert u.shape == v.shape and (u.tobytes() == v.tobytes() if u.dtype.kind in "biuf"
                                           else (u == v).all()), f"{problem.slug}: {x.name} changes with the seed"
    assert all(c.seed == 3 for c in _cases(problem, 3) if c.hidden)


def test_one_spec_template():
    """Every spec module reads the same way: a module docstring, the imports from
    grader.spec, STATEMENT and HINTS before the code, MISTAKES, PROBLEM last, and a
    reference for every function."""
    for p in PROBLEMS:
        mod = inspect.getmodule(p.make_cases)
        src = inspect.getsource(mod)
        assert mod.__doc__ and mod.__doc__.startswith(f"Problem {p.number}:"), p.slug
        assert "from grader.spec import" in src and "from ..spec" not in src, p.slug
        order = [src.find(s) for s in ("STATEMENT = ", "HINTS = ", "MISTAKES = ", "PROBLEM = Problem(")]
        assert -1 not in order and order == sorted(order), (
            f"{p.slug}: STATEMENT, HINTS, MISTAKES, PROBLEM missing or out of order")
        assert p.reference and set(p.reference) == set(p.functions), p.slug
