"""What the browser version (Pyodide: numpy and matplotlib, no torch, no triton, no
subprocesses) needs, for every chapter and problem the course has -- found, not listed,
so a new one is checked without anyone adding it here:

* a chapter imports torch, triton or kernels only behind a guard (tests/chapter_checklist.py,
  "browser"), and a chapter whose code names them runs clean with them blocked;
* the math core, the judge and every problem that does not need torch (Problem.needs_torch)
  load with torch and triton blocked, and their model answers pass graded in this process;
* "needs torch and Triton" is decided in one place, Problem.needs_torch."""
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from classroom import execute
from grader import runner
from tests import chapter_checklist as checklist
from tests.test_notebooks import NOTEBOOKS, run_as_in_browser

ROOT = Path(__file__).resolve().parent.parent


def names_the_gpu_stack(chapter: Path) -> bool:
    code = "\n".join(c.source for c in nbformat.read(chapter, as_version=4).cells if c.cell_type == "code")
    return re.search(r"\b(torch|triton|kernels)\b", code) is not None


GPU_CHAPTERS = [c for c in NOTEBOOKS if names_the_gpu_stack(c)]


@pytest.mark.parametrize("chapter", NOTEBOOKS, ids=[c.stem for c in NOTEBOOKS])
def test_chapter_imports_torch_only_behind_a_guard(chapter):
    problems = checklist.browser(checklist.Course(problems=[], figures={}), chapter)
    assert not problems, f"{chapter.name}: " + "; ".join(problems)


def test_the_guard_check_can_fail(tmp_path):
    cell = "import numpy as np\n{}"
    course = checklist.Course(problems=[], figures={})
    for code, bad in (("import torch", True), ("from kernels.reference import x", True),
                      ("try:\n    import triton\nexcept ImportError:\n    triton = None", False),
                      ("if HAVE_TORCH:\n    import torch", False),
                      ("try:\n    import torch\nexcept KeyError:\n    pass", True)):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(cell.format(code))]
        path = tmp_path / "09_x.ipynb"
        nbformat.write(nb, path)
        assert bool(checklist.browser(course, path)) is bad, code


@pytest.mark.parametrize("chapter", GPU_CHAPTERS, ids=[c.stem for c in GPU_CHAPTERS])
def test_chapter_runs_with_torch_and_triton_blocked(chapter):
    nb = run_as_in_browser(chapter)
    errors = execute.errors(nb)
    assert not errors, f"{chapter.name} without torch/triton: {errors[0]['ename']}: {errors[0]['evalue']}"
    assert any(execute.WITHOUT_TAG in c.metadata.get("tags", []) for c in nb.cells), "the blocking cell ran"


def test_core_and_numpy_problems_import_with_torch_blocked():
    """In a fresh interpreter where `import torch` / `import triton` fail, the core, the
    judge and every problem that does not need torch load, and their model answers pass
    when graded in-process (the browser has no subprocesses)."""
    want = [p.slug for p in runner.discover() if not p.needs_torch]
    script = r"""
import sys
sys.modules["torch"] = None      # makes `import torch` raise ImportError
sys.modules["triton"] = None
import mlacourse, grader
from grader.records import ProblemStatus
from grader import runner
errors = []
probs = [p for p in runner.discover(errors) if not p.needs_torch]
assert not errors, errors
for p in probs:  # the model answers pass in-process, as they would in the browser
    res = runner.grade(p, runner.SOLUTIONS / p.filename, seed=3, isolation="none")
    assert res.status is ProblemStatus.PASSED, (p.slug, res.status)
print("ok", *[p.slug for p in probs])
"""
    res = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.split() == ["ok", *want], res.stdout + res.stderr


def test_needs_torch_is_decided_once():
    """Only grader/spec.py turns `requires` into "needs torch and Triton"; everything else
    asks Problem.needs_torch (the sandbox, the command line, the classroom, the site)."""
    decided = re.compile(r"requires\b.*\b(torch|triton)\b|\b(torch|triton)\b.*\brequires\b")
    found = []
    for top in ("grader", "classroom", "web", "mlacourse"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "grader/spec.py" or rel.startswith("grader/problems/"):
                continue
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if decided.search(line.split("#")[0]):
                    found.append(f"{rel}:{i}: {line.strip()}")
    assert not found, "decide it with Problem.needs_torch:\n  " + "\n  ".join(found)
    p = runner.discover()[0]
    for requires, needs in ((("numpy",), False), (("torch", "triton"), True), (("numpy", "triton"), True)):
        assert dataclasses.replace(p, requires=requires).needs_torch is needs, requires
