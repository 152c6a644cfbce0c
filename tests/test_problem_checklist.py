"""CONTRIBUTING.md's "A new practice problem", enforced: a fake problem added to a copy of the
course with exactly the files, the hand edit and the commands CONTRIBUTING counts.

The fake problem is the one grader/spec.py documents (problem 99, scaled_sum: its spec, stub
template, learner base and named mistake, as the docstring writes them), completed the way
CONTRIBUTING says -- model answer, three more right attempts, the wrong attempts as a slip
file -- then `python -m authoring regenerate`, the translation of its catalogue entries, and
the command again. With every step done, every check passes; each step left out fails a
named test with a message that names what is missing; and the counts CONTRIBUTING states
(new files, hand edits, regenerated files, commands and tools) are the ones measured here:
the files written, the files the two runs of the command changed, the commands of its block.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from authoring import course as course_mod
from authoring import registry
from grader import runner, spec
from tests import test_generated, test_judge_i18n, test_judge_specs, test_problems

sys.path.insert(0, str(Path(__file__).resolve().parent / "corpus"))
import probe  # noqa: E402  (the corpus's rules: headers, counts, folders)

ROOT = Path(__file__).resolve().parent.parent
STEM = "p99_scaled_sum"
HOME = f"grader/problems/{STEM}"
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
SECTION = CONTRIBUTING.split("## A new practice problem", 1)[1].split("\n## ", 1)[0]


# ------------------------------------------------------------------ the new problem's files

def _example(marker: str, until: str | None = None) -> str:
    """A file of grader/spec.py's documented example, from its '# path' line on."""
    doc = spec.__doc__
    start = doc.index(f"    # {marker}")
    end = doc.index(f"    # {until}") if until else len(doc)
    return textwrap.dedent(doc[start:end]).split("\n", 1)[1].replace("'''", '"""').rstrip("\n") + "\n"


def _wrong_entries() -> str:
    entries = [f"=== wrong_plus_{k}.py\nexpect: fail\nslip: adds {k} to every sum.\n@@\n"
               f"-    return np.sum(x, axis=0) * scale\n+    return np.sum(x, axis=0) * scale + {k}\n"
               for k in range(1, 12)]   # with the named mistake: 12 wrong attempts
    return "# Problem 99's near-copy wrong attempts (grader/slips.py).\n\n" + "\n".join(entries)


def _right(body: str) -> str:
    return f'"""expect: pass\nslip: none, written another way.\n"""\nimport numpy as np\n\n\ndef scaled_sum(x, scale):\n    return {body}\n'


NEW_FILES = {   # CONTRIBUTING's "9 new files", in its order
    f"{HOME}/spec.py": _example(f"{HOME}/spec.py", f"{HOME}/stub.py"),
    f"{HOME}/stub.py": _example(f"{HOME}/stub.py", f"{HOME}/learner.py"),
    f"{HOME}/learner.py": _example(f"{HOME}/learner.py", f"{HOME}/mistakes.diff"),
    f"{HOME}/mistakes.diff": _example(f"{HOME}/mistakes.diff"),
    f"solutions/{STEM}.py": "import numpy as np\n\n\ndef scaled_sum(x, scale):\n    return np.sum(x, axis=0) * scale\n",
    f"{HOME}/corpus/right_0.py": _right("scale * np.asarray(x).sum(0)"),
    f"{HOME}/corpus/right_1.py": _right("np.einsum('nd->d', x) * scale"),
    f"{HOME}/corpus/right_2.py": _right("sum(row for row in x) * scale"),
    f"{HOME}/corpus/wrong.diff": _wrong_entries(),
}
HAND_EDITED = {"i18n/zh_CN/judge.po"}   # the translations of the new entries


def _translate(course: Path) -> None:
    """The hand edit: every new entry of the judge's catalogue translated (here, kept as the
    English, which keeps every number, name and link as a translation must)."""
    import polib
    path = course / "i18n/zh_CN/judge.po"
    po = polib.pofile(str(path), wrapwidth=0)
    for e in po:
        if (e.msgctxt or "").startswith("p99 ") and not e.msgstr:
            e.msgstr = e.msgid
    po.wrapwidth = 0
    po.save(str(path))


def _digests(course: Path) -> dict[str, str]:
    return {p.relative_to(course).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in course.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _changed(before: dict, after: dict) -> set[str]:
    return {f for f in set(before) | set(after) if before.get(f) != after.get(f)}


@dataclass
class Built:
    complete: Path        # the course with every step done
    before: Path          # the course with the new files only (nothing regenerated yet)
    regenerated: set      # the files the two runs of the command changed
    hand_edited: set      # the files the hand edit changed


@pytest.fixture(scope="module")
def built(tmp_path_factory, pristine_course) -> Built:
    base = tmp_path_factory.mktemp("checklist")
    before = base / "before"
    shutil.copytree(pristine_course, before, symlinks=True)
    for rel, text in NEW_FILES.items():
        (before / rel).parent.mkdir(parents=True, exist_ok=True)
        (before / rel).write_text(text, encoding="utf-8")
    complete = base / "complete"
    shutil.copytree(before, complete, symlinks=True)
    start = _digests(complete)
    with course_mod.at(complete):
        registry.regenerate(complete, say=lambda _text: None)
        first = _digests(complete)
        _translate(complete)
        translated = _digests(complete)
        registry.regenerate(complete, say=lambda _text: None)
    end = _digests(complete)
    return Built(complete, before, _changed(start, first) | _changed(translated, end),
                 _changed(first, translated))


# ------------------------------------------------------------------ the counts CONTRIBUTING states

def _stated(what: str) -> int:
    m = re.search(rf"\*\*A new problem is (\d+) new files, (\d+) hand edits?(?:,| and) (\d+) commands of "
                  rf"(\d+) tools; the one command\s+rewrites (\d+) files\.\*\*", SECTION)
    assert m, "CONTRIBUTING's problem section states no counts in the form the checklist test reads"
    return int(m.group(("new", "hand", "commands", "tools", "regenerated").index(what) + 1))


def _commands() -> list[str]:
    block = SECTION.split("The 3 commands", 1)[1].split("```bash", 1)[1].split("```", 1)[0] \
        if "The 3 commands" in SECTION else SECTION.split("```bash", 1)[1].split("```", 1)[0]
    return [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines() if line.startswith("python")]


def test_contributing_states_the_counts_this_test_measures(built):
    """The files, hand edits, regenerated files, commands and tools of CONTRIBUTING's section
    are those a new problem took here (the fake problem, the copy, the command run twice)."""
    assert len(NEW_FILES) == _stated("new")
    for rel in NEW_FILES:
        assert f"`{rel.replace(STEM, 'pNN_slug').replace('right_0', 'right_*')}`" in SECTION or \
            rel.endswith(("right_1.py", "right_2.py")), f"CONTRIBUTING does not name {rel}"
    assert built.hand_edited == HAND_EDITED and len(HAND_EDITED) == _stated("hand")
    listed = {f.replace("pNN_slug", STEM).replace("NN_slug", "01_kv_cache")
              for f in re.findall(r"`((?:practice|README|notebooks|\.github|docs|i18n|grader)[^`]*)`",
                                  SECTION.split("The 10 files the command rewrites", 1)[1])}
    assert built.regenerated == listed, (sorted(built.regenerated - listed), sorted(listed - built.regenerated))
    assert len(built.regenerated) == _stated("regenerated")
    commands = _commands()
    distinct = {re.sub(r" -k pNN$", "", c) for c in commands}
    tools = {c.split()[2] for c in commands}
    assert len(distinct) == _stated("commands") and len(tools) == _stated("tools"), (distinct, tools)
    assert f"{registry.COMMAND}" in commands and commands.count(registry.COMMAND) == 2
    for c in commands:   # every test file a command names exists
        for name in re.findall(r"tests/\S+", c):
            assert (ROOT / name).exists(), f"CONTRIBUTING runs {name}, which does not exist"


# ------------------------------------------------------------------ the steps

@dataclass
class Step:
    name: str                           # CONTRIBUTING's words
    forget: Callable[[Built, Path], None]  # undoes the step in a copy of the complete course
    test: Callable[[Path], None]        # the real check that holds the course to it
    says: str                           # what its failure message must name


def _fake() -> spec.Problem:
    return runner.find(99)


def _loads(course: Path) -> None:
    test_judge_specs.test_every_spec_loads()


def _in(course: Path):
    """probe's rules read the course's problem folders."""
    probe.PROBLEMS_DIR = course / "grader" / "problems"
    return {p.number: p for p in runner.discover()}


def _counts(course: Path) -> None:
    specs = _in(course)
    why = probe.shortfall(99, specs, probe.attempts([99]))
    assert why is None, why


def _folders(course: Path) -> None:
    assert probe.stray_folders(_in(course)) == [], probe.stray_folders(_in(course))


def _rm(rel: str) -> Callable[[Built, Path], None]:
    def forget(built, course):
        (course / rel).unlink()
    forget.file = rel
    return forget


def _back_to_before(built: Built, course: Path) -> None:
    """The generated files as they were before the command ran (the new files kept)."""
    for rel in built.regenerated:
        src = built.before / rel
        if src.is_file():
            shutil.copy2(src, course / rel)
        else:
            (course / rel).unlink()


def _untranslated(built: Built, course: Path) -> None:
    import polib
    path = course / "i18n/zh_CN/judge.po"
    po = polib.pofile(str(path), wrapwidth=0)
    for e in po:
        if (e.msgctxt or "").startswith("p99 "):
            e.msgstr = ""
    po.wrapwidth = 0
    po.save(str(path))


STEPS = [
    Step("the spec, grader/problems/pNN_slug/spec.py", _rm(f"{HOME}/spec.py"),
         _folders, STEM),
    Step("the stub template, grader/problems/pNN_slug/stub.py", _rm(f"{HOME}/stub.py"),
         lambda c: test_generated.assert_fresh(c, registry.REGISTRY[:1]), f"no stub template {HOME}/stub.py"),
    Step("the learner base, grader/problems/pNN_slug/learner.py", _rm(f"{HOME}/learner.py"),
         _loads, f"its base learner.py is not in {STEM}/"),
    Step("the named mistakes, grader/problems/pNN_slug/mistakes.diff", _rm(f"{HOME}/mistakes.diff"),
         _loads, f"no named mistakes in {STEM}/mistakes.diff"),
    Step("the model answer, solutions/pNN_slug.py", _rm(f"solutions/{STEM}.py"),
         lambda c: test_problems.test_judge_grades_solution_passed_and_stub_not_started(_fake()),
         f"solutions/{STEM}.py"),
    Step("three more right attempts, corpus/right_*.py", _rm(f"{HOME}/corpus/right_0.py"), _counts, "3 right"),
    Step("the wrong attempts, corpus/wrong.diff", _rm(f"{HOME}/corpus/wrong.diff"), _counts, "1 wrong"),
    Step("python -m authoring regenerate", _back_to_before,
         lambda c: test_generated.assert_fresh(c), f"run `{registry.COMMAND}`"),
    Step("translate the new entries of i18n/zh_CN/judge.po", _untranslated,
         lambda c: test_judge_i18n.test_catalogue_is_complete_in_step_and_compiled(), "[p99 title]"),
]


def test_every_step_is_checked():
    """A step for each new file, for the hand edit and for the command: nothing CONTRIBUTING
    asks for is checked by nothing (right_1 and right_2 count like right_0)."""
    files = {getattr(s.forget, "file", None) for s in STEPS} - {None}
    assert files == set(NEW_FILES) - {f"{HOME}/corpus/right_1.py", f"{HOME}/corpus/right_2.py"}
    assert any("regenerate" in s.name for s in STEPS) and any("translate" in s.name for s in STEPS)


def test_the_complete_fake_course_passes_every_step(built, monkeypatch):
    """The checklist is enough: with every step done, each check passes, and so do the
    spec's own rules (its reference passes, its mistake is named as itself) and the
    corpus's (every header reads, every attempt expands)."""
    monkeypatch.setattr(probe, "PROBLEMS_DIR", probe.PROBLEMS_DIR)
    with course_mod.at(built.complete):
        assert 99 in [p.number for p in runner.discover()]
        for step in STEPS:
            step.test(built.complete)
        test_judge_specs.test_reference_passes_every_case(_fake())
        test_judge_specs.test_each_mistake_is_named_as_itself(_fake())
        specs = _in(built.complete)
        assert probe.lint(probe.attempts([99]), specs) == []
        assert [a.name for a in probe.attempts([99]) if a.expect == "pass"][:1] == [f"{STEM}/learner.py"]


@pytest.mark.parametrize("step", STEPS, ids=[s.name.split(",")[0] for s in STEPS])
def test_a_step_left_out_fails_by_name(built, tmp_path, step, monkeypatch):
    course = tmp_path / "course"
    shutil.copytree(built.complete, course, symlinks=True)
    step.forget(built, course)
    monkeypatch.setattr(probe, "PROBLEMS_DIR", probe.PROBLEMS_DIR)   # _in points it at the copy: put back after
    with course_mod.at(course):
        if step.name.startswith("translate"):   # the catalogue as the command compiles it
            registry.REGISTRY[4].write(course)
        with pytest.raises(AssertionError) as failure:
            step.test(course)
    assert step.says in str(failure.value), f"{step.name}: the failure says {str(failure.value)[:600]!r}"

