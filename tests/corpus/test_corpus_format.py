"""The corpus itself is well formed (fast; grading it with the judge is probe.py's job,
and tests/test_judge_corpus.py's).

Every attempt has a parseable header that agrees with its file name, every problem folder
belongs to a problem, and each problem has at least 12 wrong attempts (its named mistakes
count: each is one) and 4 right ones (its learner base counts: it is graded as one).
The rules live in probe.py (stray_folders, shortfall, lint): tests/test_problem_checklist.py
holds a fake problem to the same ones."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import probe  # noqa: E402
from grader.runner import discover  # noqa: E402

SPECS = {p.number: p for p in discover()}
ATTEMPTS = probe.attempts()


def test_headers_are_valid():
    assert probe.lint(ATTEMPTS, SPECS) == []


def test_every_folder_belongs_to_a_problem():
    assert SPECS and probe.stray_folders(SPECS) == []


@pytest.mark.parametrize("number", sorted(SPECS))
def test_enough_attempts_per_problem(number):
    assert probe.shortfall(number, SPECS, ATTEMPTS) is None, probe.shortfall(number, SPECS, ATTEMPTS)


def test_the_named_mistakes_are_attempts_that_name_themselves():
    named = {(a.number, a.mistake) for a in ATTEMPTS if a.is_named_mistake and a.expect == "fail"}
    assert named == {(p.number, m.name) for p in SPECS.values() for m in p.mistakes}


def test_parse_header_reads_only_the_leading_keys(tmp_path):
    f = tmp_path / "wrong_x.py"
    f.write_text('"""expect: fail\nslip: a slip\n  on two lines.\nreason: timeout\n\nmistake: not a header line\n"""\n')
    assert probe.parse_header(f) == {"expect": "fail", "slip": "a slip on two lines.", "reason": "timeout"}
