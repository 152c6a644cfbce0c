"""Notebook hand-ins: a problem's functions are taken out of a student's .ipynb without
running anything, written as a practice file and graded by the judge like one; a notebook
that cannot be used is refused with its reason in the console, summary.md, the gradebook,
verdicts.csv, matching.md and the student's results file.

The unit tests build notebooks in memory; one module fixture grades a small class of
problem-4 notebooks through the real command line (`python -m classroom grade`),
and one test runs Gradescope's run_autograder on notebooks."""
import csv
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from grader import runner
from classroom import __main__ as cli
from classroom import notebooks, platforms, submissions
from tests import slow_notebooks

ROOT = Path(__file__).resolve().parent.parent
SOL4 = (ROOT / "solutions" / "p04_choose_path.py").read_text()
NONCAUSAL = SOL4.replace("pairs = n_new * n_ctx - n_new * (n_new - 1) // 2", "pairs = n_new * n_ctx")
P4 = runner.find(4)


def notebook(*cells, counts=None) -> bytes:
    """An nbformat-4 notebook; a cell starting with '#MD' is markdown."""
    out = []
    for i, src in enumerate(cells):
        if src.startswith("#MD"):
            out.append({"cell_type": "markdown", "metadata": {}, "source": src[3:]})
        else:
            out.append({"cell_type": "code", "metadata": {}, "outputs": [],
                        "execution_count": (counts or {}).get(i + 1),
                        "source": src.splitlines(keepends=True)})   # as Jupyter saves it: a list
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": out}).encode()


def extract(data: bytes, problem=P4):
    return notebooks.extract(notebooks.read_notebook("hw/week4.ipynb", data), problem)


# --------------------------------------------------------------------------- extraction

def test_the_functions_and_what_they_use_are_taken_nothing_else():
    assert NONCAUSAL != SOL4
    helper_sol = SOL4.replace("pairs = n_new * n_ctx - n_new * (n_new - 1) // 2", "pairs = causal_pairs(n_new, n_ctx)")
    data = notebook(
        "#MD # Week 4",
        "%matplotlib inline\nimport numpy as np, os\nimport math",
        "def choose_path(n_new, n_ctx):\n    return 'expand'   # a first try, replaced below",
        "UNUSED = 5\nlisting = !ls\nTWO = 2",
        "def causal_pairs(n_new, n_ctx):\n    return n_new * n_ctx - n_new * (n_new - 1) // TWO",
        helper_sol,
        "print(choose_path(1, 8192))\nattention_flops(4, 10)")
    ex = extract(data)
    assert ex.refused == "", ex.refused
    src = ex.source
    compile(src, "p04_choose_path.py", "exec")      # valid Python (compiled, never run here)
    assert "def causal_pairs" in src and "TWO = 2" in src
    assert src.count("def choose_path") == 1 and "a first try" not in src   # the last definition wins
    for left_out in ("import numpy", "import os", "import math", "UNUSED", "listing", "!ls", "print(",
                     "attention_flops(4, 10)", "matplotlib"):
        assert left_out not in src, left_out
    assert ex.cells == [4, 5, 6]
    assert any("defined 2 times" in n and "cell 6" in n for n in ex.notes), ex.notes
    # every copied line maps back to its cell and line
    lines = src.split("\n")
    for gen, (cell, line) in ex.line_map.items():
        cell_src = json.loads(data)["cells"][cell - 1]["source"]
        assert lines[gen - 1] == "".join(cell_src).split("\n")[line - 1], (gen, cell, line)
    assert extract(data).source == src                # deterministic


def test_imports_keep_only_the_names_used():
    data = notebook("import numpy as np, os\nfrom math import sqrt, pi",
                    "def attention_flops(n_new, n_ctx, **k):\n    return {'expand': np.sqrt(pi), 'absorb': 0}",
                    "def choose_path(n_new, n_ctx, **k):\n    return 'absorb'")
    src = extract(data).source
    assert "import numpy as np\n" in src and "from math import pi\n" in src
    assert "import os" not in src and ", os" not in src and "sqrt" not in src.replace("np.sqrt", "")


def test_nothing_in_the_notebook_runs_while_it_is_read(tmp_path):
    marker = tmp_path / "ran.txt"
    data = notebook(f"LOG = open({str(marker)!r}, 'w')\nLOG.write('top level ran')",
                    f"import os\nos.system('touch {marker}')",
                    "def attention_flops(n_new, n_ctx, **k):\n    LOG.write('x')\n    return {}",
                    "def choose_path(n_new, n_ctx, **k):\n    return 'absorb'")
    cands = [submissions.Candidate("hw.ipynb", data, None)]
    matches, _ = submissions.match(cands, [P4], {})
    assert not marker.exists(), "reading a notebook must not run it"
    m = matches[4]
    assert m.rule == "notebook: defines the functions"
    # LOG is changed after it is set (LOG.write at top level is not a known mutator, so it
    # is copied): the assignment is in the file the judge will run in its sandbox
    assert f"LOG = open({str(marker)!r}, 'w')" in m.data.decode()


REFUSALS = [
    ("no function", notebook("def choose_path(n_new, n_ctx):\n    return 'absorb'"),
     "no cell defines `attention_flops` at top level"),
    ("a name no cell defines", notebook(NONCAUSAL.replace("pairs = n_new", "pairs = helper(1) + n_new")),
     "`attention_flops` uses `helper`, which no cell of the notebook defines"),
    ("a syntax error", notebook(SOL4, "def choose_path(n_new, n_ctx:\n    return 'absorb'"),
     "cell 2 redefines `choose_path` but does not parse (line 1:"),
    ("the only definition does not parse", notebook(SOL4.replace("def choose_path(n_new,", "def choose_path(n_new,,")),
     "no cell defines `attention_flops`, `choose_path` at top level (problem 4 asks for `attention_flops`, "
     "`choose_path`); cell 1 has a definition but does not parse (line 21: invalid syntax)"),
    ("a loop sets the value", notebook("for k in range(3):\n    HEADS = 128", SOL4.replace("n_heads=128", "n_heads=HEADS")),
     "`HEADS` (used by `attention_flops`) is set by a `for` loop (cell 1, line 1"),
    ("changed after it is set", notebook("DIMS = [128]\nDIMS.append(64)", SOL4.replace("n_heads=128", "n_heads=DIMS[0]")),
     "`DIMS` (used by `attention_flops`) is set in cell 1, line 1 and then changed in cell 1, line 2 by `DIMS.append(64)`"),
    ("a subscript store", notebook("CFG = {}\nCFG['h'] = 128", SOL4.replace("n_heads=128", "n_heads=CFG['h']")),
     "then changed in cell 1, line 2 by `CFG['h']`"),
    ("an IPython command", notebook("HEADS = !nproc", SOL4.replace("n_heads=128", "n_heads=HEADS")),
     "`HEADS` is the output of an IPython command (cell 1, line 1: `HEADS = ...`)"),
    ("a star import", notebook("from numpy import *", SOL4.replace("n_ctx * 2 *", "n_ctx * int(ceil(2.0)) *")),
     "may come from `from numpy import *` (cell 1, line 1)"),
    ("cells run out of order", notebook("HEADS = heads()", "def heads():\n    return 128",
                                        SOL4.replace("n_heads=128", "n_heads=HEADS")),
     "`HEADS` uses `heads` before any cell defines it (it is first defined in cell 2, line 1)"),
    ("Jupyter only", notebook(SOL4.replace("return {", "display(n_new)\n    return {")),
     "uses `display`, which exists only inside Jupyter"),
    ("set through global", notebook("def setup():\n    global HEADS\n    HEADS = 128", "setup()",
                                    SOL4.replace("n_heads=128", "n_heads=HEADS")),
     "set only inside a function through `global HEADS` (cell 1, line 1)"),
    ("defined in a %run file", notebook("%run helpers.py", SOL4.replace("pairs = n_new", "pairs = helper() + n_new")),
     "it may come from `%run helpers.py` (cell 1)"),
    ("not JSON", b"{ this is not json", "not valid JSON"),
    ("nbformat 3", json.dumps({"nbformat": 3, "worksheets": []}).encode(), "old-format notebook (nbformat 3)"),
]


@pytest.mark.parametrize("data,why", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_a_notebook_that_cannot_be_rebuilt_is_refused_with_its_reason(data, why):
    ex = extract(data)
    assert why in ex.refused, ex.refused
    assert ex.source == "" and ex.data == b""


def test_cell_magics_python_or_not():
    data = notebook("%%bash\ndef attention_flops(): pass", "%%time\n" + SOL4)
    nb = notebooks.read_notebook("x.ipynb", data)
    assert nb.foreign == [(1, "%%bash")]
    ex = notebooks.extract(nb, P4)
    assert ex.refused == "" and ex.cells == [2]


# --------------------------------------------------------------------------- which file is graded

def _match(files: dict, stubs=None):
    cands = [submissions.Candidate(rel, data, None) for rel, data in files.items()]
    return submissions.match(cands, [P4, runner.find(5)], stubs or {})


def test_a_practice_file_wins_over_a_notebook_but_a_stub_does_not():
    stub = (ROOT / "practice" / P4.filename).read_bytes()
    import hashlib
    stubs = {4: hashlib.sha256(stub).hexdigest()}
    m, notes = _match({"practice/p04_choose_path.py": SOL4.encode(), "work.ipynb": notebook(NONCAUSAL)}, stubs)
    assert m[4].rel == "practice/p04_choose_path.py" and m[4].notebook is None
    assert any("work.ipynb: a notebook for problem 4; the practice file" in n for n in notes)
    m, notes = _match({"practice/p04_choose_path.py": stub, "work.ipynb": notebook(SOL4)}, stubs)
    assert m[4].rel == "work.ipynb" and m[4].notebook is not None
    assert any("practice/p04_choose_path.py: the unchanged stub" in n for n in notes)


def test_notebooks_match_by_name_or_by_the_functions_they_define():
    m, notes = _match({"p04.ipynb": notebook("x = 1"), "misc/scratch.ipynb": notebook("y = 2")})
    assert m[4].rule == "notebook: number" and "no cell defines" in m[4].notebook.refused
    assert any("misc/scratch.ipynb: notebook not graded" in n for n in notes)
    lse = (ROOT / "solutions" / "p05_lse_merge.py").read_text()
    m, _ = _match({"homework.ipynb": notebook(SOL4, lse)})
    assert set(m) == {4, 5} and all(x.rule == "notebook: defines the functions" for x in m.values())
    assert "def lse_merge" in m[5].data.decode() and "def choose_path" not in m[5].data.decode()
    m, _ = _match({"homework.ipynb": notebook("def choose_path(n_new, n_ctx:\n    return 1")})
    assert m[4].rule == "notebook: defines the functions" and "does not parse" in m[4].notebook.refused


def test_a_chapter_handed_back_unchanged_is_not_an_attempt():
    """Chapter 4 defines a (deliberately wrong) attention_flops and choose_path for its
    judge demo: handed back as it is, it is not the student's attempt; with the learner's
    fix of attention_flops in it, it is, and the chapter's choose_path comes along."""
    chapter = ROOT / "notebooks" / "04_flops_and_path_choice.ipynb"
    m, notes = _match({"notebooks/" + chapter.name: chapter.read_bytes()})
    assert 4 not in m and any(chapter.name in n and "notebook not graded" in n for n in notes)
    doc = json.loads(chapter.read_text())
    cell = next(c for c in doc["cells"] if c["cell_type"] == "code" and "def attention_flops" in "".join(c["source"]))
    src = "".join(cell["source"])
    fixed = src.replace("pairs = n_new * n_ctx  #", "pairs = n_new * n_ctx - n_new * (n_new - 1) // 2  #")
    assert fixed != src, "chapter 4's demo changed: update this test"
    cell["source"] = fixed
    m, _ = _match({"notebooks/" + chapter.name: json.dumps(doc).encode()})
    assert m[4].rule == "notebook: defines the functions" and m[4].notebook.refused == ""
    text = m[4].data.decode()
    assert "n_new * (n_new - 1) // 2" in text and "def choose_path" in text and "check(" not in text


# --------------------------------------------------------------------------- a class, graded

CLASS = {
    "alice/homework.ipynb": notebook("#MD my answers", "import numpy as np", SOL4, "choose_path(1, 8192)"),
    "bob/p04.ipynb": notebook(NONCAUSAL),
    "carol/week4.ipynb": notebook(SOL4.replace("pairs = n_new", "pairs = helper(n_new) + n_new")),
    "dave/lab/p04_choose_path.ipynb": notebook("import math", SOL4.replace("return {", "raise ValueError('oops')\n    return {")),
    "erin/practice/p04_choose_path.py": (ROOT / "practice" / P4.filename).read_text(),
    "erin/notes/Untitled.ipynb": notebook(SOL4),
}
CAROL_WHY = "`attention_flops` uses `helper`, which no cell of the notebook defines"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("nbclass")
    for rel, content in CLASS.items():
        f = base / "subs" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(content if isinstance(content, bytes) else content.encode())
    out = base / "grades"
    import contextlib
    import io
    console = io.StringIO()
    with contextlib.redirect_stdout(console), contextlib.redirect_stderr(io.StringIO()):
        rc = cli.main(["grade", str(base / "subs"), "--out", str(out), "--seed", "11", "--problems", "4",
                       "--workers", "2", "--no-progress"])
    assert rc == 0, console.getvalue()
    return out, console.getvalue()


def _verdicts(out):
    with open(out / "verdicts.csv", newline="") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def test_notebooks_are_graded_like_files(graded):
    out, _ = graded
    v = _verdicts(out)
    assert (v["alice"]["status"], v["alice"]["file"]) == ("passed", "alice/homework.ipynb")
    assert (v["bob"]["status"], v["bob"]["reason"], v["bob"]["mistake"]) == ("failed", "wrong_answer", "non-causal pairs")
    assert v["erin"]["status"] == "passed" and v["erin"]["file"] == "erin/notes/Untitled.ipynb"
    alice = json.loads((out / "results" / "alice.json").read_text())
    assert alice["files"] == {"p04": "alice/homework.ipynb"} and alice["score"] == 1
    bob = json.loads((out / "results" / "bob.json").read_text())
    assert bob["files"] == {"p04": "bob/p04.ipynb"} and bob["score"] == 0
    assert bob["tests"][0]["status"] == "fail" and "Likely slip" in bob["tests"][0]["message"]


def test_the_judges_messages_point_at_the_notebooks_cells(graded):
    out, _ = graded
    dave = json.loads((out / "results" / "dave.json").read_text())
    msg = dave["tests"][0]["message"]
    line = SOL4.split("\n").index(next(ln for ln in SOL4.split("\n") if "return {" in ln)) + 1
    assert f"p04_choose_path.ipynb cell 2, line {line}, in attention_flops: raise ValueError('oops')" in msg, msg


def test_a_refused_notebook_says_why_in_every_report(graded):
    out, console = graded
    assert f"NOT GRADED: carol problem 4: the notebook carol/week4.ipynb could not be used: {CAROL_WHY}" in console
    assert "notebooks: 4 attempt(s) graded from notebooks, 1 NOT GRADED" in console
    summary = (out / "summary.md").read_text()
    assert "**1 notebook hand-in(s) could NOT be graded**" in summary
    assert f"- `carol`, problem 4: `carol/week4.ipynb` -- `` {CAROL_WHY}" in summary   # a code span
    data = json.loads((out / "summary.json").read_text())
    assert [r[:3] for r in data["notebooks"]["refused"]] == [["carol", 4, "carol/week4.ipynb"]]
    with open(out / "gradebook.csv", newline="") as f:
        book = {r["student"]: r for r in csv.DictReader(f)}
    assert book["carol"]["p04_choose_path"] == "0"
    assert book["carol"]["notebooks"].startswith("p04 NOT GRADED: week4.ipynb could not be used")
    assert CAROL_WHY in book["carol"]["notebooks"] and book["alice"]["notebooks"] == "p04 graded from homework.ipynb"
    v = _verdicts(out)["carol"]
    assert (v["status"], v["reason"]) == ("failed", "notebook_unusable") and CAROL_WHY in v["file_notes"]
    carol = json.loads((out / "results" / "carol.json").read_text())
    t = carol["tests"][0]
    assert t["status"] == "error" and t["score"] == 0
    assert t["message"].startswith("NOT GRADED: the notebook week4.ipynb could not be used for problem 4")
    assert CAROL_WHY in t["message"] and "hand in practice/p04_choose_path.py" in t["message"]
    matching = (out / "matching.md").read_text()
    assert f"- p04: `week4.ipynb` (notebook: defines the functions) -- ``NOT GRADED: {CAROL_WHY}" in matching
    assert "notes/Untitled.ipynb was graded for problem 4 instead" in matching


def test_gradescope_grades_notebooks_too(tmp_path):
    zip_path, _ = platforms.build_gradescope(tmp_path / "dist", seed=5, with_torch=False)
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(root / "source")
    sub = root / "submission"
    sub.mkdir(parents=True)
    (sub / "week4.ipynb").write_bytes(notebook(SOL4))
    (sub / "p01.ipynb").write_bytes(notebook("def something():\n    return 1"))
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    res = json.loads((root / "results" / "results.json").read_text())
    assert platforms.validate_gradescope(res) == []
    tests = {t["name"]: t for t in res["tests"]}
    assert tests["p04 choose_path: all cases, hidden included"]["status"] == "passed"
    p01 = tests["p01 kv_cache_bytes: all cases, hidden included"]
    assert p01["status"] == "failed" and "NOT GRADED: the notebook p01.ipynb" in p01["output"]
    assert "no cell defines `kv_cache_bytes`" in tests["p01 kv_cache_bytes: public cases"]["output"]
    assert res["score"] == 1.0 and "week4.ipynb" in res["output"]


# --------------------------------------------------------------------------- notebooks built to be slow

READ_BOUND_S = 15.0   # wall seconds to read one of them for every problem (measured: 0.1-4.3 s)


@pytest.mark.parametrize("name", sorted(slow_notebooks.SLOW))
def test_a_notebook_built_to_be_slow_is_read_within_a_bound(name):
    """Each of tests/slow_notebooks.py (within every byte limit of a hand-in; the analysis
    once took from a minute to most of an hour on them) is read for all problems, in the
    bounded child, well within READ_BOUND_S -- and read, not refused for time: the bound is
    the algorithm's, not the limit's."""
    problems = runner.discover()
    data = slow_notebooks.SLOW[name]()
    assert len(data) <= notebooks.MAX_NOTEBOOK_BYTES
    notebooks.course_functions()
    t0 = time.monotonic()
    got = notebooks.analyse_bounded(f"{name}.ipynb", data, problems, {1})
    took = time.monotonic() - t0
    assert took < READ_BOUND_S, f"{name}: {took:.1f} s"
    assert "limits" not in got.error and "failed" not in got.error, got.error
    ex = got.extractions[1]
    if name in ("fanout", "shared_line", "deep", "statements"):
        assert not ex.refused and "def kv_cache_bytes" in ex.source, ex.refused
    elif name == "changed":
        assert "and then changed in cell 9001" in ex.refused
    else:
        assert ex.refused.startswith("no cell defines `kv_cache_bytes`")


def test_a_class_of_slow_notebooks_is_matched_within_a_bound(tmp_path):
    """The same notebooks handed in by seven students, found and matched the way `grade`
    does (submissions.discover): all of them within 7 x READ_BOUND_S."""
    for name, make in slow_notebooks.SLOW.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "p01_kv_cache_bytes.ipynb").write_bytes(make())
    t0 = time.monotonic()
    subs, _ = submissions.discover(tmp_path, runner.discover(), {})
    took = time.monotonic() - t0
    assert took < len(slow_notebooks.SLOW) * READ_BOUND_S, f"{took:.1f} s"
    assert {s.student for s in subs} == set(slow_notebooks.SLOW)
    assert all(1 in s.matches for s in subs)


def test_reading_a_notebook_is_cut_off_at_its_cpu_and_memory_limits():
    """The child that reads a notebook stops at its CPU seconds and its memory, and the
    notebook is refused saying which (not the teacher's process: that goes on)."""
    problems = runner.discover()
    data = slow_notebooks.fanout()   # about 3 s of CPU to read
    slow = notebooks.analyse_bounded("cpu.ipynb", data, problems, {1}, cpu_s=1)
    assert "took more than 1 s of CPU" in slow.error and "hand in the .py file" in slow.error
    # the memory cap counts what the child allocates beyond the fork's heap, and a large
    # parent's free heap is reused first: read from a small, fresh process
    probe = subprocess.run([sys.executable, "-c", (
        "from tests import slow_notebooks as sn; from classroom import notebooks; from grader import runner; "
        "print(notebooks.analyse_bounded('memory.ipynb', sn.fanout(), runner.discover(), {1}, "
        "memory=30 << 20).error)")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "needs more than 30 MB" in probe.stdout, probe.stdout[-500:] + probe.stderr[-2000:]
    # what a refusal quotes from the notebook is cut
    long_name = "v" * 100_000
    nb = slow_notebooks.notebook([f"def kv_cache_bytes():\n    return {long_name}"])
    ex = notebooks.analyse_bounded("long.ipynb", nb, problems, {1}).extractions[1]
    assert ex.refused and len(ex.refused) <= notebooks.MAX_REASON and "cut" in ex.refused


def test_a_cell_the_parser_overflows_on_is_broken_and_the_rest_is_read():
    """CPython's parser says MemoryError on a stack overflow (`-` fifty thousand times): that
    cell is listed as broken and the notebook's other cells are read; a notebook of many
    such cells ends its read (as out of memory) instead of failing cell after cell."""
    problems = runner.discover()
    deep = "x = " + "-" * 50_000 + "1"
    one = slow_notebooks.notebook([deep, "def kv_cache_bytes(*a):\n    return 1"])
    read = notebooks.analyse_bounded("one.ipynb", one, problems, {1})
    assert not read.error and read.defines[1], read.error
    many = slow_notebooks.notebook([deep] * 15)
    refused = notebooks.analyse_bounded("many.ipynb", many, problems, {1})
    assert "needs more than" in refused.error, refused.error


def test_a_read_that_used_up_its_memory_still_says_so(monkeypatch):
    """The reading child answers "needs more than N MB" even when the read holds on to every
    byte it was given: the answer is composed before the limit, and a reserve is freed
    before it is written (composed after, the answer itself ran out of memory, and the
    notebook was refused as "stopped without an answer")."""
    hoard = []

    def analyse_that_keeps_everything(*_):
        chain = None   # a chain of tuples, no list to grow: every block of every size is taken
        for size in (1 << 16, 4096, 512, 200, 64, 24, 8):
            try:
                while True:
                    chain = (chain, bytes(size))
            except MemoryError:
                pass
        hoard.append(chain)
        raise MemoryError

    monkeypatch.setattr(notebooks, "analyse", analyse_that_keeps_everything)
    read = notebooks.analyse_bounded("hoard.ipynb", slow_notebooks.notebook(["x = 1"]), runner.discover(),
                                     {1}, memory=30 << 20)
    assert "needs more than 30 MB" in read.error, read.error
