"""CONTRIBUTING.md's checklist for a new practice problem, enforced: a fake problem in a
temporary course fails a named test for each step left out.

The fake problem is the one grader/spec.py documents (problem 99, scaled_sum: its spec and
its named mistake, as the docstring writes them), completed the way CONTRIBUTING says --
stub, model answer, corpus, README rows, chapter link, regenerated guide and workflow --
in a folder of its own. The tests that hold the real course to each step run on that
folder (their module globals pointed at it: runner.PROBLEMS_DIR and friends); each must
pass on the complete fake course and fail, with a message that names what is missing, once
its step is undone. So a step CONTRIBUTING lists is never checked by nothing, and the list
below says which test checks it.
"""
from __future__ import annotations

import json
import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from grader import runner, spec
from classroom import guide, platforms
from grader.report import PROG
from tests import test_classroom_platforms, test_classroom_slides, test_course_map, test_judge_specs, test_problems

sys.path.insert(0, str(Path(__file__).resolve().parent / "corpus"))
import probe  # noqa: E402
import test_corpus_format  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
STEM = "p99_scaled_sum"
CHAPTER = "notebooks/01_kv_cache.ipynb"   # the chapter the documented example names


# ------------------------------------------------------------------ the fake course

def _example(marker: str, until: str | None = None) -> str:
    """A file of grader/spec.py's documented example, from its '# path' line on."""
    doc = spec.__doc__
    start = doc.index(f"    # {marker}")
    end = doc.index(f"    # {until}") if until else len(doc)
    return textwrap.dedent(doc[start:end]).split("\n", 1)[1].replace("'''", '"""')


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _build(course: Path) -> None:
    """The fake course, every step of the checklist done (the generated files last)."""
    mistake = "grader/problems/mistakes/p99_scaled_sum/row_sums.py"
    _write(course / f"grader/problems/{STEM}.py", _example(f"grader/problems/{STEM}.py", mistake))
    _write(course / mistake, _example(mistake))
    _write(course / f"practice/{STEM}.py", (
        '"""Problem 99: scaled column sums. Check your answer: ' + PROG + ' 99"""\n\n\n'
        "def scaled_sum(x, scale):\n"
        '    """x [n, d], scale: float -> [d]"""\n'
        "    # TODO(problem 99): sum down the columns, times scale.\n"
        '    raise NotImplementedError("problem 99: write scaled_sum")\n'))
    _write(course / f"solutions/{STEM}.py",
           "import numpy as np\n\n\ndef scaled_sum(x, scale):\n    return np.sum(x, axis=0) * scale\n")
    corpus = course / "tests" / "corpus" / STEM
    for i, body in enumerate(["np.sum(x, axis=0) * scale", "scale * np.asarray(x).sum(0)",
                              "np.einsum('nd->d', x) * scale", "sum(row for row in x) * scale"]):
        _write(corpus / f"right_{i}.py", f'"""expect: pass\nslip: none, written another way.\n"""\n'
                                         f"import numpy as np\n\n\ndef scaled_sum(x, scale):\n    return {body}\n")
    for k in range(1, 12):  # with the named mistake: 12 wrong attempts
        _write(corpus / f"wrong_plus_{k}.py", f'"""expect: fail\nslip: adds {k} to every sum.\n"""\n'
                                              f"import numpy as np\n\n\ndef scaled_sum(x, scale):\n"
                                              f"    return np.sum(x, axis=0) * scale + {k}\n")
    _write(course / "README.md", "# A fake course\n\n## The map\n\n| # | chapter | what | practice |\n"
                                 "|---|---|---|---|\n| 1 | [The KV cache](notebooks/01_kv_cache.ipynb) | "
                                 "bytes | 99 |\n\n## Practice problems\n\n| # | problem | chapter |\n|---|---|---|\n"
                                 "| 99 | `scaled_sum` — scaled column sums | 1 |\n")
    _write(course / CHAPTER, json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "id": "title", "metadata": {}, "source": [
            "# Chapter 1 — The KV cache\n", "\n", "Practice: [problem 99](../practice/p99_scaled_sum.py)\n"]}]}))
    _write(course / "docs" / "teaching.md", guide.GUIDE.read_text())    # as committed: not yet regenerated
    _write(course / ".github/classroom/classroom.yml", platforms.WORKFLOW.read_text())


def _point_at(course: Path, monkeypatch) -> None:
    """The real tests' globals, pointed at the fake course."""
    monkeypatch.setattr(runner, "PROBLEMS_DIR", course / "grader" / "problems")
    monkeypatch.setattr(runner, "PRACTICE", course / "practice")
    monkeypatch.setattr(runner, "SOLUTIONS", course / "solutions")
    monkeypatch.setattr(guide, "GUIDE", course / "docs" / "teaching.md")
    monkeypatch.setattr(platforms, "WORKFLOW", course / ".github/classroom/classroom.yml")
    monkeypatch.setattr(probe, "HERE", course / "tests" / "corpus")
    monkeypatch.setattr(probe, "MISTAKES_DIR", course / "grader" / "problems" / "mistakes")
    problems = runner.discover()
    monkeypatch.setattr(test_course_map, "ROOT", course)
    monkeypatch.setattr(test_course_map, "PROBLEMS", problems)
    monkeypatch.setattr(test_corpus_format, "SPECS", {p.number: p for p in problems})
    monkeypatch.setattr(test_corpus_format, "ATTEMPTS", probe.attempts())


def _regenerate(course: Path, monkeypatch) -> None:
    """The checklist's last step: `python -m classroom guide` and `... github`."""
    _point_at(course, monkeypatch)
    guide.write()
    platforms.WORKFLOW.write_text(platforms.workflow_text())


@pytest.fixture(scope="module")
def complete(tmp_path_factory) -> Path:
    course = tmp_path_factory.mktemp("course")
    _build(course)
    with pytest.MonkeyPatch.context() as mp:
        _regenerate(course, mp)
    return course


def _fake() -> spec.Problem:
    return runner.find(99)


# ------------------------------------------------------------------ the steps

@dataclass
class Step:
    name: str                      # CONTRIBUTING's words
    forget: Callable[[Path], None]  # undoes the step in a copy of the complete course
    test: Callable[[], None]       # the real test that holds the course to it
    says: str                      # what its failure message must name


def _drop_line(path: Path, text: str) -> None:
    lines = path.read_text().split("\n")
    path.write_text("\n".join(line for line in lines if text not in line))


def _edit(path: Path, old: str, new: str) -> None:
    assert old in path.read_text(), (path, old)
    path.write_text(path.read_text().replace(old, new))


STEPS = [
    Step("the named mistakes, one file each in grader/problems/mistakes/pNN_slug/",
         lambda c: shutil.rmtree(c / "grader/problems/mistakes" / STEM),
         test_judge_specs.test_every_spec_loads, "no named mistakes"),
    Step("the stub, practice/pNN_slug.py",
         lambda c: (c / "practice" / f"{STEM}.py").unlink(),
         test_course_map.test_stubs_name_one_command_and_their_number, f"no stub practice/{STEM}.py"),
    Step("the stub raises NotImplementedError",
         lambda c: _drop_line(c / "practice" / f"{STEM}.py", "raise NotImplementedError"),
         lambda: test_problems.test_judge_grades_solution_passed_and_stub_not_started(_fake()),
         "every function of a stub raises NotImplementedError"),
    Step("the model answer, solutions/pNN_slug.py",
         lambda c: (c / "solutions" / f"{STEM}.py").unlink(),
         lambda: test_problems.test_judge_grades_solution_passed_and_stub_not_started(_fake()),
         f"no file {'{'}SOLUTIONS{'}'}"),
    Step("the corpus: 4 right attempts",
         lambda c: (c / "tests/corpus" / STEM / "right_0.py").unlink(),
         lambda: test_corpus_format.test_enough_attempts_per_problem(99), "3 right"),
    Step("the corpus: 12 wrong attempts, the named mistakes included",
         lambda c: (c / "tests/corpus" / STEM / "wrong_plus_1.py").unlink(),
         lambda: test_corpus_format.test_enough_attempts_per_problem(99), "11 wrong"),
    Step("a row in the README's problem table",
         lambda c: _drop_line(c / "README.md", "`scaled_sum`"),
         test_course_map.test_readme_problem_table_matches_the_specs, "README problem table"),
    Step("the problem's number in its chapter's row of the README's map",
         lambda c: _edit(c / "README.md", "| bytes | 99 |", "| bytes | -- |"),
         test_course_map.test_readme_map_has_a_row_per_chapter_listing_its_problems, "does not list problems [99]"),
    Step("a link in the chapter's practice list",
         lambda c: _edit(c / CHAPTER, "[problem 99](../practice/p99_scaled_sum.py)", "problem 99"),
         test_course_map.test_each_chapter_links_its_problems_and_only_real_ones, "does not link its problems"),
    Step("python -m classroom guide (docs/teaching.md)",
         lambda c: shutil.copy2(guide.GUIDE, c / "docs" / "teaching.md"),
         test_classroom_slides.test_the_guide_is_generated_from_the_specs, "python -m classroom guide"),
    Step("python -m classroom github (.github/classroom/classroom.yml)",
         lambda c: shutil.copy2(platforms.WORKFLOW, c / ".github/classroom/classroom.yml"),
         test_classroom_platforms.test_committed_workflow_is_generated_from_the_specs,
         "python -m classroom github"),
]


def test_the_complete_fake_course_passes_every_step(complete, monkeypatch):
    """The checklist is enough: with every step done, each test passes, and so do the
    spec's own rules (its reference passes, its mistake is named as itself)."""
    _point_at(complete, monkeypatch)
    assert [p.number for p in runner.discover()] == [99]
    for step in STEPS:
        step.test()
    test_judge_specs.test_reference_passes_every_case(_fake())
    test_judge_specs.test_each_mistake_is_named_as_itself(_fake())
    test_corpus_format.test_headers_are_valid()
    test_corpus_format.test_every_folder_belongs_to_a_problem()


@pytest.mark.parametrize("step", STEPS, ids=[s.name.split(" (")[0] for s in STEPS])
def test_a_step_left_out_fails_by_name(complete, tmp_path, monkeypatch, step):
    course = tmp_path / "course"
    shutil.copytree(complete, course)
    step.forget(course)
    _point_at(course, monkeypatch)
    with pytest.raises(AssertionError) as failure:
        step.test()
    says = step.says.replace("{SOLUTIONS}", str(course / "solutions"))
    assert says in str(failure.value), f"{step.name}: the failure says {str(failure.value)[:500]!r}"
