"""The course's map agrees with the problem specs, which are the one source of truth:
the README's problem table, the map's row per chapter, each chapter's practice list (the
checks of tests/chapter_checklist.py), and each stub's header."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader import runner
from grader.report import PROG
from tests import chapter_checklist as checklist

pytestmark = pytest.mark.smoke   # in the default run (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = runner.discover()


def _chapter_number(chapter_path: str) -> int:
    return int(Path(chapter_path).name[:2])


def test_readme_problem_table_matches_the_specs():
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Practice problems"):]
    rows = re.findall(r"^\| (\d+) \| `(\w+)` — .*? \| (\d+) \|$", table, flags=re.M)
    got = [(int(n), slug, int(ch)) for n, slug, ch in rows]
    want = [(p.number, p.slug, _chapter_number(p.chapter)) for p in PROBLEMS]
    assert got == want, f"README problem table {got} != specs {want}"


def test_readme_map_has_a_row_per_chapter_listing_its_problems():
    course = checklist.Course(root=ROOT, problems=PROBLEMS, figures={})
    missing = [f"{ch.name}: {m}" for ch in course.chapters() for m in checklist.readme_map(course, ch)]
    assert not missing, "\n".join(missing)


def test_each_chapter_links_its_problems_and_only_real_ones():
    course = checklist.Course(root=ROOT, problems=PROBLEMS, figures={})
    missing = [f"{ch.name}: {m}" for ch in course.chapters() for m in checklist.practice_list(course, ch)]
    assert not missing, "\n".join(missing)


def test_every_spec_names_an_existing_chapter():
    for p in PROBLEMS:
        assert (ROOT / p.chapter).is_file(), f"problem {p.number}: no chapter {p.chapter}"


def test_stubs_name_one_command_and_their_number():
    for p in PROBLEMS:
        stub = runner.PRACTICE / p.filename
        assert stub.is_file(), f"problem {p.number} has no stub practice/{p.filename}"
        src = stub.read_text()
        assert f"{PROG} {p.number}" in src, f"{p.filename} must say `{PROG} {p.number}`"
        assert f"TODO(problem {p.number})" in src, f"{p.filename} needs a TODO(problem {p.number})"
        assert "python judge.py" not in src and ".venv/bin/python" not in src, p.filename
    for p in PROBLEMS:
        for h in p.hints:
            assert "judge.py" not in h or PROG in h, f"problem {p.number}: a hint names another command"
