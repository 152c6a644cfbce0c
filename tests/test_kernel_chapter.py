"""Chapter 6 in the browser: with numpy and matplotlib only (Pyodide has no torch and no
triton), it must open, say at the top what needs a GPU or torch/triton, skip those cells
cleanly (no error outputs, no tracebacks), and still show its pictures, the recorded
compile report and the recorded benchmark. The full run (torch + triton + interpreter)
is tests/test_notebooks.py's."""
import re
from pathlib import Path

import nbformat
import pytest

from classroom import execute
from tests.test_notebooks import BROWSER_TIMES, run_as_in_browser

CHAPTER = Path(__file__).resolve().parent.parent / "notebooks" / "06_decode_kernel.ipynb"


@pytest.fixture(scope="module")
def executed_without_torch():
    """(the chapter run with torch and triton blocked, seconds): once per session."""
    nb = run_as_in_browser(CHAPTER)
    return nb, BROWSER_TIMES[CHAPTER.name]


def _outputs(nb):
    return execute.outputs(nb)


def _text(nb):
    return execute.printed(nb)


def test_top_cell_says_what_needs_a_gpu():
    nb = nbformat.read(CHAPTER, as_version=4)
    top = nb.cells[0].source
    assert "What runs where" in top and "torch" in top and "triton" in top and "GPU" in top
    setup = nb.cells[1].source
    assert "HAVE_TORCH" in setup and "except ImportError" in setup


def test_chapter_runs_without_torch_and_triton(executed_without_torch):
    nb, seconds = executed_without_torch
    errors = [o for o in _outputs(nb) if o.output_type == "error"]
    assert not errors, f"{errors[0]['ename']}: {errors[0]['evalue']}"
    text = _text(nb)
    assert "Traceback" not in text
    assert "torch: False, triton: False" in text
    assert text.count("(skipped: this cell needs torch and triton") >= 5
    print(f"chapter 6 without torch/triton: {seconds:.1f} s")


def test_pictures_and_records_still_show(executed_without_torch):
    nb, _ = executed_without_torch
    images = [o for o in _outputs(nb) if "image/png" in o.get("data", {})]
    assert len(images) >= 2, "the kernel map and the work-per-SM plot need no GPU"
    text = _text(nb)
    assert "| gluon bf16 BLOCK_M=64 |" in text and "### triton 3.6.0" in text, "the recorded compile report"
    assert "not measured yet" in text, "each version's recorded benchmark row, or 'not measured yet'"
    assert "HBM bytes / cache bytes 1.98" in text and "v4 planned" in text, "the schedule model runs on numpy"


def test_exercises_are_checked_by_asserts():
    nb = nbformat.read(CHAPTER, as_version=4)
    solutions = [c for c in nb.cells if c.cell_type == "code" and "solution" in c.metadata.get("tags", [])]
    assert len(solutions) >= 2 and all("check_exercise(" in c.source for c in solutions)
    learner = [c for c in nb.cells if c.cell_type == "code" and re.search(r"= \.\.\.", c.source)]
    assert len(learner) == len(solutions)  # every exercise has a cell for the learner's answer
    questions = [c for c in nb.cells if c.cell_type == "markdown" and "(what if)" in c.source]
    assert len(questions) >= 2
