"""What every chapter does for its reader before any lesson: it limits BLAS to one thread
before numpy loads (on 2 busy cores chapter 3 took 44 s with the default threads and 16 s
with one), and each figure it shows carries alt text, which the site's book turns into
<img alt> (mlacourse.diagrams.describe_figure)."""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from tests import chapter_checklist as checklist
from tests.test_notebooks import NOTEBOOKS, run_chapter

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.smoke
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_first_code_cell_sets_one_blas_thread_before_numpy_loads(path):
    problems = checklist.blas_thread(checklist.Course(problems=[], figures={}), path)
    assert not problems, f"{path.name}: " + "; ".join(problems)


def test_describe_figure_reads_titles_labels_and_legends():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mlacourse.diagrams import describe_figure

    fig, (a, b) = plt.subplots(1, 2)
    a.plot([1, 2], [3, 4], label="MLA $d_c$")
    a.plot([1, 2], [4, 5], label="GQA")
    a.set(title="Cache per token", xlabel="context", ylabel="GB")
    a.legend()
    b.axis("off")
    b.text(0.5, 0.5, "c_kv [T, 512]")
    text = describe_figure(fig)
    assert text == ("panel 1: Cache per token; 2 lines; x axis: context; y axis: GB; legend: MLA d_c, GQA. "
                    "panel 2: diagram: c_kv [T, 512]")
    fig.suptitle("x" * 500)
    assert len(describe_figure(fig)) == 400 and describe_figure(fig).endswith("…")
    plt.close("all")


def _figures(nb):
    return [(i, o) for i, c in enumerate(nb.cells) if c.cell_type == "code"
            for o in c.outputs if "image/png" in o.get("data", {})]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_figure_has_alt_text_in_the_book(path, caplog):
    """Executed as the tests execute it, every PNG a chapter shows has an alt in its output
    metadata, and the book's page has no <img> without one (nbconvert would warn)."""
    nb = run_chapter(path)
    figures = _figures(nb)
    missing = [i for i, o in figures if not ((o.metadata.get("image/png") or {}).get("alt") or o.metadata.get("alt"))]
    assert not missing, f"{path.name}: figures without alt text in cells {missing}"
    sys.path.insert(0, str(ROOT / "web"))
    import build
    body = build.render_page(build.book_exporter(), copy.deepcopy(nb), path)  # nb is shared: a copy
    assert "Alternative text is missing" not in caplog.text
    assert body.count("<img") >= len(figures)
    assert "No description has been provided for this image" not in body
