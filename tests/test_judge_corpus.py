"""The hidden corpus (grader/problems/pNN_slug/corpus/ and its learner bases: tests/corpus/README.md)
and every problem's named mistakes (mistakes.diff): every right attempt passes and every wrong one fails, on
each of several seeds, through the real judge (one child process per attempt, as a
learner's `python practice/judge.py N --file F` would run it).

To grade several seeds in one child, an attempt is graded on a problem whose cases are
the union of the cases of SEEDS -- the same cases the judge would run seed by seed, so a
wrong attempt that passes any one seed passes nothing here. Where a file's header says
why it must fail (`reason:`), the verdict must say so too; where it declares a mistake
(`mistake:`: every named mistake's own file, and corpus variants of one), the judge must
name exactly that mistake, and where it declares none, none.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader import runner
from grader.records import CaseStatus, ProblemStatus

sys.path.insert(0, str(Path(__file__).resolve().parent / "corpus"))
import probe  # noqa: E402  (the corpus's own reader of file headers)

pytestmark = pytest.mark.slow  # a few minutes: every attempt through the real judge

SEEDS = (1, 2, 3, 4)
SLOW_SEEDS = (1, 2)  # problem 12 runs its kernels in Triton's interpreter
PROBLEMS = {p.number: p for p in runner.discover()}
# the verdict a header's reason asks for -> the judge's reason tags that say so
REASONS = {
    "uses_reference": {"uses_reference"},
    "timeout": {"timeout"},
    "memory": {"memory"},
    "exit": {"exit"},
    "crash": {"crash"},
    "wrong_type": {"wrong_type"},
    "wrong_shape": {"wrong_shape"},
    "not_finite": {"not_finite"},
    "mutated_input": {"mutated_input"},
    "no_kernel": {"no_kernel"},
    "tamper": {"exception", "uses_reference", "import_error"},  # the write is refused
}
if runner.default_isolation() is runner.Isolation.JAIL:
    # In the OS sandbox the course is not there at all: an attempt that walks up its
    # folders looking for solutions/ or grader/ never finds them and runs out of time.
    REASONS["uses_reference"] = REASONS["uses_reference"] | {"timeout"}
    REASONS["tamper"] = REASONS["tamper"] | {"timeout"}


def _skip_reason(a) -> str | None:
    """Why an attempt cannot run on this machine (a package it or its problem needs)."""
    missing = runner.missing_requirements(PROBLEMS[a.number])
    if not missing and "import torch" in a.path.read_text():
        missing = runner.missing_requirements(dataclasses.replace(PROBLEMS[a.number], requires=("torch",)))
    return f"needs {', '.join(missing)}" if missing else None


ATTEMPTS = [a for a in probe.attempts() if a.number in PROBLEMS]
PARAMS = [pytest.param(a, id=a.name, marks=pytest.mark.skipif(bool(_skip_reason(a)), reason=str(_skip_reason(a))))
          for a in ATTEMPTS]


def over_seeds(problem, seeds):
    """The problem with the cases of every seed in `seeds` at once."""
    def make_cases(_seed):
        return [c for s in seeds for c in problem.make_cases(s)]
    return dataclasses.replace(problem, make_cases=make_cases)


def _grade(attempt):
    p = PROBLEMS[attempt.number]
    seeds = SLOW_SEEDS if p.needs_torch else SEEDS
    res = runner.grade(over_seeds(p, seeds), attempt.path, seed=seeds[0])
    # The verdicts are kept for the whole session (in two languages): keep what the tests
    # read, not every case's input arrays and answers (problem 8's alone are ~120 MB per
    # attempt: kept, the corpus held the pytest process at 9.5 GB).
    for o in res.outcomes:
        o.case = dataclasses.replace(o.case, args={})
        o.result = None
    return res


RUNNABLE = [a for a in ATTEMPTS if not _skip_reason(a)]
_GRADED: dict = {}   # language -> {attempt name: result}, once per session


def graded_in(language: str) -> dict:
    """Every runnable attempt graded on SEEDS (SLOW_SEEDS for problem 12) with the judge
    speaking ``language``, once per test session (tests/test_judge_i18n.py compares the
    English grading with the Chinese one)."""
    if language not in _GRADED:
        from grader import lang
        lang.use(language, remember=True)   # per process: graded in one pass, not interleaved
        try:
            t0 = time.monotonic()
            with ThreadPoolExecutor(max_workers=2) as pool:
                _GRADED[language] = dict(zip((a.name for a in RUNNABLE), pool.map(_grade, RUNNABLE)))
            print(f"\ncorpus: {len(RUNNABLE)} attempts graded on seeds {SEEDS} ({language}) "
                  f"in {time.monotonic() - t0:.0f} s")
        finally:
            lang.forget()   # back to what the file and the environment say (tests: English)
    return _GRADED[language]


@pytest.fixture(scope="module")
def graded():
    return graded_in("en")


@pytest.mark.parametrize("attempt", PARAMS)
def test_corpus_attempt(graded, attempt):
    res = graded[attempt.name]
    first = res.first_failure()
    why = (first.message if first else res.message)[:600]
    if attempt.expect == "pass":
        assert res.status is ProblemStatus.PASSED, f"a right attempt failed: {why}"
        return
    assert res.status is ProblemStatus.FAILED, f"a wrong attempt got {res.status}: {attempt.slip}"
    if attempt.reason:  # some failing case (or the whole file) must say why
        got = {o.reason for o in res.outcomes if o.status is CaseStatus.FAIL} | {res.reason} - {None}
        assert got & REASONS[attempt.reason], (
            f"expected the verdict to say {attempt.reason}, it says {sorted(got)}: {why}")
    # the judge names the declared mistake, and nothing else; no mistake where none is declared
    messages = {m.name: m.message for m in PROBLEMS[attempt.number].mistakes}
    names = {m.message: m.name for m in PROBLEMS[attempt.number].mistakes}
    named = {names.get(o.mistake, o.mistake) for o in res.outcomes if o.mistake}
    want = {attempt.mistake} if attempt.mistake else set()
    assert named == want, (f"the judge named {sorted(named) or 'no mistake'}, the header "
                           f"{'says ' + repr(attempt.mistake) if attempt.mistake else 'names none'}: {why}")
    assert not attempt.mistake or attempt.mistake in messages
