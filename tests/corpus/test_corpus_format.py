"""The corpus itself is well formed (fast; grading it with the judge is probe.py's job).

Every attempt has a parseable header that agrees with its file name, each problem has
at least 12 wrong and 4 right attempts, and every named mistake of every spec is
written out as an attempt whose header names it."""
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


@pytest.mark.parametrize("number", sorted(SPECS))
def test_enough_attempts_per_problem(number):
    mine = [a for a in ATTEMPTS if a.number == number]
    right = [a for a in mine if a.expect == "pass"]
    wrong = [a for a in mine if a.expect == "fail"]
    assert len(right) >= 4 and len(wrong) >= 12, (number, len(right), len(wrong))


@pytest.mark.parametrize("number", sorted(SPECS))
def test_every_named_mistake_has_an_attempt(number):
    named = {a.mistake for a in ATTEMPTS if a.number == number and a.mistake}
    missing = [m.name for m in SPECS[number].mistakes if m.name not in named]
    assert missing == [], f"problem {number}: no attempt for {missing}"


def test_parse_header_reads_only_the_leading_keys(tmp_path):
    f = tmp_path / "wrong_x.py"
    f.write_text('"""expect: fail\nslip: a slip.\nreason: timeout\n\nmistake: not a header line\n"""\n')
    assert probe.parse_header(f) == {"expect": "fail", "slip": "a slip.", "reason": "timeout"}
