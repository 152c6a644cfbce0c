"""Every chapter executes without error, and is committed clean.

Execution uses nbclient with the notebook's own folder as the working directory, like
a learner opening it in Jupyter. Each chapter runs once per session (run_chapter), and
tests/test_chapter_figures.py reads the same executed notebooks. The time each chapter
takes is printed at the end of the run (see conftest.py); the total must stay under the
3-minute budget."""
import os
import time
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
# keyed by the path under notebooks/: "01_kv_cache.ipynb", "zh/01_kv_cache.ipynb" (tests/test_i18n.py)
EXECUTION_TIMES: dict[str, float] = {}
OUTPUT_TEXT: dict[str, str] = {}  # chapter -> everything its cells printed

# The figures the foundation issue asks the chapters to show, as the published sources
# state them (seeds 000/001, the DeepSeek papers, NVIDIA datasheets): (chapter, text).
FIGURES = [
    ("01", "1,966,080"), ("01", "56.9x"), ("01", "70,272"), ("01", "40,960"),
    ("01", "128.8"), ("01", "515"), ("03", "40,960"),
    ("02", "1/sqrt(192)"),
    ("04", "81,920"), ("04", "278,528"), ("04", "3.4x"), ("04", "33.6M"),
    ("04", "275.5"), ("04", "2.3"), ("04", "3,024.0"), ("04", "9,621.9"),
    ("04", "1,273.6"), ("04", "586.8"), ("04", "2,501.8"), ("04", "4,726.7"),
    ("04", "512/3"), ("04", "170.67"),
    ("05", "241.8"), ("05", "8.0 FLOP/byte"), ("05", "295.3"), ("05", "206.1"),
    ("05", "483.6"), ("05", "258"),
]


def test_there_are_chapters():
    assert len(NOTEBOOKS) >= 5, f"expected at least 5 chapters in notebooks/, found {NOTEBOOKS}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_clean(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: code cells {dirty} carry outputs or execution counts; clear them before committing"
    assert "widgets" not in nb.metadata, f"{path.name}: remove the widget state from the notebook metadata"
    first = nb.cells[0].source if nb.cells else ""
    assert nb.cells and nb.cells[0].cell_type == "markdown" and first.lstrip().startswith("#"), \
        f"{path.name}: the first cell should be a markdown title"


_EXECUTED: dict[str, object] = {}  # chapter (path under notebooks/) -> executed notebook (one run per session)


def run_chapter(path: Path):
    """Execute a chapter once per test session and return the executed notebook; later
    callers (tests/test_chapter_figures.py) reuse it. Records the time and printed text."""
    path = Path(path).resolve()
    key = path.relative_to(NOTEBOOKS_DIR).as_posix() if path.is_relative_to(NOTEBOOKS_DIR) else str(path)
    if key in _EXECUTED:
        return _EXECUTED[key]
    from nbclient import NotebookClient

    # One BLAS thread per kernel: on a 2-core machine that is also running other tests,
    # multi-threaded OpenBLAS oversubscribes the cores and a chapter can take 5x longer.
    saved = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    try:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(path.parent)}})
        start = time.perf_counter()
        client.execute()
        EXECUTION_TIMES[key] = time.perf_counter() - start
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    OUTPUT_TEXT[key] = "\n".join(
        o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get("text/plain", "")
        for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    _EXECUTED[key] = nb
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path):
    nb = run_chapter(path)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{path.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
    # the README's render command uses the same exporter: the executed chapter must render
    from nbconvert import HTMLExporter
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert "<html" in body and len(body) > 10_000


def test_every_listed_figure_is_printed_by_its_chapter():
    for path in NOTEBOOKS:
        run_chapter(path)
    missing = []
    for chapter, text in FIGURES:
        name = next(n for n in OUTPUT_TEXT if n.startswith(chapter + "_"))
        if text not in OUTPUT_TEXT[name]:
            missing.append(f"{name}: {text!r}")
    assert not missing, "figures no cell printed:\n  " + "\n  ".join(missing)


def test_the_chapters_execute_in_under_three_minutes():
    """The issue's budget for the whole set on a 2-core machine; the times are printed at the
    end of the run (conftest.py)."""
    for path in NOTEBOOKS:
        run_chapter(path)
    total = sum(EXECUTION_TIMES[p.name] for p in NOTEBOOKS)
    assert total < 180, f"the chapters took {total:.0f} s together (budget 180 s): {EXECUTION_TIMES}"
