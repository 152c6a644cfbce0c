"""What the browser version (Pyodide: numpy and matplotlib, no torch, no subprocesses)
will need: the math core, chapters 1-5 and problems 1-11 must not touch torch or triton."""
import ast
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
GPU_ONLY = {"torch", "triton"}


def imported_modules(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("chapter", sorted(p.name for p in (ROOT / "notebooks").glob("0[1-5]_*.ipynb")))
def test_chapters_1_to_5_need_no_torch(chapter):
    nb = nbformat.read(ROOT / "notebooks" / chapter, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
    assert not imported_modules(code) & GPU_ONLY, f"{chapter} imports {imported_modules(code) & GPU_ONLY}"


def test_core_and_numpy_problems_import_with_torch_blocked():
    """In a fresh interpreter where `import torch` / `import triton` fail, the core, the
    judge and every problem that does not require torch load, and their model answers
    pass when graded in-process (the browser has no subprocesses)."""
    script = r"""
import sys
sys.modules["torch"] = None      # makes `import torch` raise ImportError
sys.modules["triton"] = None
import mlacourse, grader
from grader.records import CaseStatus, ProblemStatus
from grader import runner
probs = [p for p in runner.discover() if not set(p.requires) & {"torch", "triton"}]
assert len(probs) >= 11, [p.slug for p in probs]
for p in probs:  # the model answers pass in-process, as they would in the browser
    sol = runner.ROOT / "solutions" / f"p{p.number:02d}_{p.slug}.py"
    res = runner.grade(p, sol, seed=3, isolation="none")
    assert res.status is ProblemStatus.PASSED, (p.slug, res.status)
print("ok", len(probs))
"""
    res = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.startswith("ok"), res.stdout + res.stderr
