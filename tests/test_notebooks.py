"""Every chapter executes without error, and is committed clean.

Execution uses nbclient with the notebook's own folder as the working directory, like
a learner opening it in Jupyter. The time each chapter takes is printed at the end of
the run (see conftest.py), not asserted: it depends on the machine."""
import time
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb"))
EXECUTION_TIMES: dict[str, float] = {}


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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, monkeypatch):
    from nbclient import NotebookClient

    # One BLAS thread per kernel: on a 2-core machine that is also running other tests,
    # multi-threaded OpenBLAS oversubscribes the cores and a chapter can take 5x longer.
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    EXECUTION_TIMES[path.name] = time.perf_counter() - start
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{path.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
    # the README's render command uses the same exporter: the executed chapter must render
    from nbconvert import HTMLExporter
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert "<html" in body and len(body) > 10_000
