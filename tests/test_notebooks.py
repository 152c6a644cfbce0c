"""Every chapter executes without error, and is committed clean.

Execution is classroom/execute.py's (the slides and the site's book run chapters the same
way): nbclient with the notebook's own folder as the working directory, like a learner
opening it in Jupyter. Each chapter runs once per session (run_chapter; once more with
torch and triton blocked where a test asks for the browser's view), and the chapter tests
read the same executed notebooks. The time each chapter
takes is printed at the end of the run (see conftest.py); the total must stay under the
3-minute budget."""
from pathlib import Path

import pytest

from classroom import execute

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
# keyed by the path under notebooks/: "01_kv_cache.ipynb", "zh/01_kv_cache.zh.ipynb" (tests/test_i18n.py)
EXECUTION_TIMES: dict[str, float] = {}
OUTPUT_TEXT: dict[str, str] = {}  # chapter -> everything its cells printed

# The published figures each chapter prints, as their sources state them (seeds 000/001,
# the DeepSeek papers and configs, NVIDIA datasheets, FlashMLA's README and blog), by
# chapter number. Every chapter has an entry (tests/chapter_checklist.py, "figures").
FIGURES = {
    "01": ["1,966,080", "56.9x", "70,272", "40,960", "128.8", "515"],
    "02": ["1/sqrt(192)"],
    "03": ["40,960"],
    "04": ["81,920", "278,528", "3.4x", "33.6M", "275.5", "2.3", "3,024.0", "9,621.9", "1,273.6", "586.8",
           "2,501.8", "4,726.7", "512/3", "170.67"],
    "05": ["241.8", "8.0 FLOP/byte", "295.3", "206.1", "483.6", "258"],
    "06": ["656-byte FP8 rows", "132 SMs"],                   # FlashMLA's FP8 row; the H800's SMs
    "07": ["(DeepSeek-V3: 576)", "70,272 bytes per token"],   # d_latent + d_rope; x 61 layers x 2 bytes
    "08": ["32,768 registers = 50% of an SM's 65,536", "660 / 580 = 1.138x",   # datasheet; FlashMLA
           "410 TFLOPS at top-k 2048", "'around 3000'"],                       # FlashMLA's README, blog
    "09": ["640 TFLOPS on an H800 SXM5",     # FlashMLA's README: its sparse prefill, "up to 640 TFlops"
           "989.4 TFLOPS",                   # the H800/H200 dense bf16 datasheet peak
           "65,536 tokens"],                 # vLLM's chunked-context cap, 64 * 1024 in its source
}


def test_there_are_chapters():
    assert len(NOTEBOOKS) >= 5, f"expected at least 5 chapters in notebooks/, found {NOTEBOOKS}"


@pytest.mark.smoke
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_clean(path):
    from tests import chapter_checklist as checklist
    problems = checklist.clean(checklist.Course(problems=[], figures={}), path)
    assert not problems, f"{path.name}: " + "; ".join(problems)


_EXECUTED: dict[tuple, object] = {}  # (chapter's key, blocked modules) -> executed notebook
BROWSER_TIMES: dict[str, float] = {}  # chapter -> seconds, run with torch and triton blocked


def _key(path: Path) -> str:
    path = Path(path).resolve()
    return path.relative_to(NOTEBOOKS_DIR).as_posix() if path.is_relative_to(NOTEBOOKS_DIR) else str(path)


def run_chapter(path: Path, without: tuple = ()):
    """Execute a chapter once per test session and return the executed notebook (errors
    stay in the cells' outputs); later callers reuse it. ``without``: modules made
    unimportable first, as in the browser (execute.run). Records the time and printed text
    of the full run (EXECUTION_TIMES, OUTPUT_TEXT), keyed by the path under notebooks/."""
    key = _key(path)
    if (key, tuple(without)) not in _EXECUTED:
        nb, seconds = execute.chapter(Path(path), allow_errors=True, without=without)
        if without:
            BROWSER_TIMES[key] = seconds
        else:
            EXECUTION_TIMES[key] = seconds
            OUTPUT_TEXT[key] = execute.printed(nb)
        _EXECUTED[(key, tuple(without))] = nb
    return _EXECUTED[(key, tuple(without))]


def executed_chapters() -> dict:
    """{key under notebooks/: executed notebook} of the full runs this session made so far."""
    return {key: nb for (key, without), nb in _EXECUTED.items() if not without}


def run_as_in_browser(path: Path):
    """The chapter run with torch and triton unimportable (Pyodide has neither), once per
    session."""
    from grader.spec import TORCH_STACK
    return run_chapter(path, without=TORCH_STACK)


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.smoke) if p.stem == "01_kv_cache" else p
                                  for p in NOTEBOOKS], ids=[p.stem for p in NOTEBOOKS])  # smoke: one chapter
def test_notebook_executes(path):
    nb = run_chapter(path)
    errors = execute.errors(nb)
    assert not errors, f"{path.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
    # the README's render command uses the same exporter: the executed chapter must render
    from nbconvert import HTMLExporter
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert "<html" in body and len(body) > 10_000


def test_every_listed_figure_is_printed_by_its_chapter():
    assert set(FIGURES) <= {p.name[:2] for p in NOTEBOOKS}, "FIGURES names a chapter that does not exist"
    missing = []
    for path in NOTEBOOKS:
        run_chapter(path)
        missing += [f"{path.name}: {text!r}" for text in FIGURES.get(path.name[:2], [])
                    if text not in OUTPUT_TEXT[path.name]]
    assert not missing, "figures no cell printed:\n  " + "\n  ".join(missing)


def test_the_chapters_execute_in_under_three_minutes():
    """The budget for the whole set on a 2-core machine: three minutes; the times are printed
    at the end of the run (conftest.py)."""
    for path in NOTEBOOKS:
        run_chapter(path)
    total = sum(EXECUTION_TIMES[p.name] for p in NOTEBOOKS)
    assert total < 180, f"the chapters took {total:.0f} s together (budget 180 s): {EXECUTION_TIMES}"
