"""The corpus itself is well formed (fast; grading it with the judge is probe.py's job,
and tests/test_judge_corpus.py's).

Every attempt has a parseable header that agrees with its file name, every problem folder
belongs to a problem, and each problem has at least 12 wrong attempts (its named mistakes
count: each is one) and 4 right ones."""
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
    stems = {p.stem for p in SPECS.values()}
    folders = [f for f in probe.PROBLEMS_DIR.iterdir() if f.is_dir() and f.name != "__pycache__"]
    assert folders and [f.name for f in folders if f.name not in stems] == []


@pytest.mark.parametrize("number", sorted(SPECS))
def test_enough_attempts_per_problem(number):
    mine = [a for a in ATTEMPTS if a.number == number]
    right = [a for a in mine if a.expect == "pass"]
    wrong = [a for a in mine if a.expect == "fail"]
    assert len(right) >= 4 and len(wrong) >= 12, (
        f"problem {number} has {len(right)} right and {len(wrong)} wrong attempts (its named mistakes "
        f"included); it needs at least 4 right and 12 wrong in grader/problems/{SPECS[number].stem}/corpus/")


def test_the_named_mistakes_are_attempts_that_name_themselves():
    named = {(a.number, a.mistake) for a in ATTEMPTS if a.is_named_mistake and a.expect == "fail"}
    assert named == {(p.number, m.name) for p in SPECS.values() for m in p.mistakes}


def test_parse_header_reads_only_the_leading_keys(tmp_path):
    f = tmp_path / "wrong_x.py"
    f.write_text('"""expect: fail\nslip: a slip\n  on two lines.\nreason: timeout\n\nmistake: not a header line\n"""\n')
    assert probe.parse_header(f) == {"expect": "fail", "slip": "a slip on two lines.", "reason": "timeout"}
