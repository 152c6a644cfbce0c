"""CONTRIBUTING.md's "A new chapter" checklist, enforced (tests/chapter_checklist.py):

* every chapter the course has (found, not listed) passes every step that reads files;
  tests/test_notebooks.py executes them all;
* a fake chapter after the last one, added to a copy of the course, fails each step with the step's name
  until that step is done -- the two regeneration commands (`python -m i18n update`,
  `python -m classroom guide`) run in the copy as a newcomer runs them -- and the
  chapter before it fails "next link" until it links the new one."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests import chapter_checklist as checklist

ROOT = Path(__file__).resolve().parent.parent
COURSE = checklist.Course()


@pytest.mark.parametrize("chapter", COURSE.chapters(), ids=[c.stem for c in COURSE.chapters()])
def test_every_chapter_completes_its_checklist(chapter):
    missing = checklist.failures(COURSE, chapter, checklist.STATIC)
    assert not missing, f"{chapter.name}:\n  " + "\n  ".join(f"[{s}] {m}" for s, m in missing)


# --------------------------------------------------------------------------- a fake chapter

N = checklist.number(COURSE.chapters()[-1]) + 1   # the fake chapter comes after today's last one
FAKE = f"{N:02d}_fake_topic.ipynb"
BLAS = ('import os  # one BLAS thread: set before numpy loads (a small machine oversubscribes)\n'
        'for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):\n'
        '    os.environ.setdefault(_var, "1")\n')


def _md(text):
    return nbformat.v4.new_markdown_cell(text)


def _code(text, **metadata):
    cell = nbformat.v4.new_code_cell(text)
    cell.metadata.update(metadata)
    return cell


def first_draft() -> nbformat.NotebookNode:
    """What a newcomer might commit first: a title, some text, code that imports torch
    at the top and uses a name it never defines, a cell still holding its output."""
    nb = nbformat.v4.new_notebook()
    done = _code("print(3)")
    done.outputs = [nbformat.v4.new_output("stream", text="3\n")]
    done.execution_count = 1
    nb.cells = [_md("# A fake topic\n\nWhat this chapter asks."),
                _code("import numpy as np\nimport torch\nprint(np.arange(4).sum())"),
                _md("Some text."), done, _code("print(undefined_name)")]
    return nb


def _run(cmd, cwd):
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    done = subprocess.run([sys.executable, *cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_new_chapter_fails_a_named_step_until_each_is_done(course_copy):
    real = checklist.Course()
    path = course_copy / "notebooks" / FAKE
    before = course_copy / "notebooks" / real.chapters()[-1].name   # today's last chapter
    # a problem taught by the new chapter (a spec object; the problem's own checklist is
    # CONTRIBUTING's "A new practice problem")
    fake_problem = dataclasses.replace(real.problems[0], number=99, slug="fake_topic", chapter=f"notebooks/{FAKE}")
    course = checklist.Course(course_copy, [*real.problems, fake_problem], dict(real.figures))
    nb = first_draft()
    nbformat.write(nb, path)

    def undone(chapter=path, steps=checklist.STATIC):   # "executes" runs the chapter: first and last
        return {step for step, _ in checklist.failures(course, chapter, steps)}

    left = set(checklist.STEPS)
    assert undone(steps=checklist.STEPS) == left, "every step of a first draft is named"
    assert undone(before) == {"next link"}, f"{before.name} must link the new chapter"

    def did(step, change):
        change()
        nbformat.write(nb, path)
        left.discard(step)
        steps = checklist.STEPS if step == "executes" else checklist.STATIC
        assert undone(steps=steps) == left & set(steps), f"after doing '{step}'"

    def clean():
        nb.cells[0].source = f"# Chapter {N} — A fake topic\n\nWhat this chapter asks."
        nb.cells[3].outputs, nb.cells[3].execution_count = [], None
    did("clean", clean)
    did("blas thread", lambda: setattr(nb.cells[1], "source", BLAS + nb.cells[1].source))
    did("sections", lambda: nb.cells.extend([_md(f"## {N}.1 The idea\n\nText."), _md("## Summary\n\n- one point")]))
    hidden = {"jupyter": {"source_hidden": True}, "tags": ["solution"]}
    did("exercises", lambda: nb.cells.extend([
        _md(f"**Exercise {N}.1.** Sum it."), _code(f"# Solution to exercise {N}.1\nprint(1 + 2)", **hidden),
        _md(f"**Exercise {N}.2.** Double it."), _code(f"# Solution to exercise {N}.2\nprint(2 * 2)", **hidden)]))
    did("practice list", lambda: nb.cells.append(
        _md("**Practice:** [Problem 99 · fake_topic](../practice/p99_fake_topic.py).")))
    did("next link", lambda: nb.cells.append(
        _md("Next: this is the course's last chapter for now — back to [the map](../README.md).")))
    before_nb = nbformat.read(before, as_version=4)
    last = before_nb.cells[-1]
    last.source = last.source.split("Next:")[0] + f"Next: [Chapter {N} · A fake topic]({FAKE})."
    nbformat.write(before_nb, before)
    assert undone(before) == {"chinese catalogue"}, "an edited English cell needs `python -m i18n update`"

    def readme_row():
        readme = course_copy / "README.md"
        text = readme.read_text()
        row = next(ln for ln in text.splitlines() if ln.startswith(f"| {checklist.number(before)} | ["))
        readme.write_text(text.replace(row, row + f"\n| {N} | [A fake topic](notebooks/{FAKE}) | a derivation | 99 |"))
    did("readme map", readme_row)
    did("chinese catalogue", lambda: _run(["-m", "i18n", "update"], course_copy))
    assert undone(before) == set()
    did("teaching guide", lambda: _run(["-m", "classroom", "guide"], course_copy))

    def guard_torch():
        nb.cells[1].source = nb.cells[1].source.replace(
            "import torch\n", "try:\n    import torch\nexcept ImportError:  # the browser\n    torch = None\n")
    did("browser", guard_torch)
    did("figures", lambda: course.figures.update({f"{N:02d}": ["the published figure"]}))
    did("executes", lambda: nb.cells.pop(4))   # the cell that used an undefined name
    assert left == set() and checklist.failures(course, path) == []
    # the rest of the course did not notice, and the real repository is untouched
    assert all(not checklist.failures(course, ch, checklist.STATIC) for ch in course.chapters())
    assert not (ROOT / "notebooks" / FAKE).exists()


def test_the_checklist_is_contributings():
    """CONTRIBUTING.md's chapter checklist names each step the test enforces, and the one
    command that regenerates what a chapter's steps derive."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = text[text.index("## A new chapter"):]
    section = section[:section.index("\n## ", 5)] if "\n## " in section[5:] else section
    for step in checklist.STEPS:
        assert f"({step})" in section, f"CONTRIBUTING's chapter checklist does not name the step ({step})"
    assert "python -m authoring regenerate" in section and "python -m tests.chapter_checklist" in section
