"""Run a chapter the one way the course does: for the lecture decks (slides.py), the
site's book (web/build.py) and the tests (tests/test_notebooks.py and the chapter tests).

    seconds = execute.run(nb, folder)                    # nb: an nbformat notebook, run in place
    nb, seconds = execute.chapter(path)                  # read notebooks/NN_slug.ipynb and run it
    nb, seconds = execute.chapter(path, without=("torch", "triton"))   # as in the browser
    execute.printed(nb), execute.errors(nb), execute.images(nb)

nbclient starts a fresh kernel whose working directory is the chapter's folder, as when a
reader opens it in Jupyter. The kernel gets one BLAS thread: on a small machine running
other work, multi-threaded OpenBLAS oversubscribes the cores and a chapter takes up to five
times longer. The setting is handed to the kernel alone (nbclient passes ``env`` to the
kernel's process), so this process's environment is never changed and nothing needs
restoring. ``without`` inserts a first code cell that makes those imports fail, the way
they fail in the browser (Pyodide has no torch and no triton).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

# The tag every exercise's solution cell carries (CONTRIBUTING: "A new chapter", exercises;
# Jupyter shows it collapsed by its jupyter.source_hidden): the site's book shows it inside a
# closed <details> (web/build.py), the lecture decks leave it out (slides.py).
SOLUTION_TAG = "solution"
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
WITHOUT_TAG = "mla-without"   # the tag on the cell that ``without`` inserts


def blocking_cell(modules) -> str:
    """Code that makes ``import m`` raise ImportError for each module (a None entry in
    sys.modules is how Python spells "this module cannot be imported")."""
    lines = ["import sys  # inserted by classroom/execute.py: these imports fail, as in the browser"]
    lines += [f"sys.modules[{m!r}] = None" for m in modules]
    return "\n".join(lines)


def run(nb, folder: Path, *, timeout: int = 600, allow_errors: bool = False, without=()) -> float:
    """Execute ``nb`` in place with ``folder`` as the working directory; returns the
    seconds it took. ``allow_errors``: keep going after a cell raises (the error is in
    that cell's outputs: ``errors``); otherwise nbclient raises CellExecutionError.
    ``timeout``: seconds per cell."""
    from nbclient import NotebookClient
    import nbformat

    if without:
        cell = nbformat.v4.new_code_cell(blocking_cell(without))
        cell.metadata["tags"] = [WITHOUT_TAG]
        nb.cells.insert(1 if nb.cells else 0, cell)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=allow_errors,
                            resources={"metadata": {"path": str(folder)}})
    start = time.perf_counter()
    client.execute(env={**os.environ, **ONE_BLAS_THREAD})
    return time.perf_counter() - start


def chapter(path: Path, **options):
    """(the executed notebook, seconds) for the chapter at ``path``; ``options`` as ``run``."""
    import nbformat

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    return nb, run(nb, path.parent, **options)


def outputs(nb) -> list:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def printed(nb) -> str:
    """Everything the cells printed or showed as text, in order."""
    return "\n".join(o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get("text/plain", "")
                     for o in outputs(nb))


def errors(nb) -> list:
    """The error outputs (a cell that raised), in order."""
    return [o for o in outputs(nb) if o.output_type == "error"]


def images(nb) -> list:
    """The PNG outputs (the figures the chapter drew), in order."""
    return [o for o in outputs(nb) if "image/png" in o.get("data", {})]


__all__ = ["run", "chapter", "printed", "errors", "images", "outputs", "blocking_cell", "ONE_BLAS_THREAD"]
