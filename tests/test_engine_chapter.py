"""Chapter 7 (the inference engine): it executes (as tests/test_notebooks.py runs a
chapter), it is ready for the browser, its exercises assert, and every figure it reports
re-derives from the core's formulas (mlacourse.cache, mlacourse.flops, page counts)
computed here independently of the cells."""
import ast
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from mlacourse.engine import Engine, ModelConfig, mix_stream, random_stream, submit, system_prompt_stream

ROOT = Path(__file__).resolve().parent.parent
NB = ROOT / "notebooks" / "07_inference_engine.ipynb"
CFG = ModelConfig()


def ceil_div(a, b):
    return -(-a // b)


@pytest.fixture(scope="module")
def executed():
    from nbclient import NotebookClient

    saved = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    try:
        nb = nbformat.read(NB, as_version=4)
        client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NB.parent)}})
        start = time.perf_counter()
        client.execute()
        seconds = time.perf_counter() - start
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{NB.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
                     if o.output_type == "stream")
    line = next(l for l in text.splitlines() if l.startswith("CHAPTER7_FIGURES "))
    print(f"\n{NB.name} executed in {seconds:.1f} s")
    return dict(nb=nb, text=text, seconds=seconds, figures=json.loads(line.split(" ", 1)[1]))


def test_committed_clean_with_the_course_heading_style():
    nb = nbformat.read(NB, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"code cells {dirty} carry outputs or execution counts; clear them before committing"
    md = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert md[0].startswith("# Chapter 7 — ") and "**Questions this chapter answers**" in md[0]
    sections = [int(m.group(1)) for s in md for m in re.finditer(r"^## 7\.(\d+) ", s, re.M)]
    assert sections == list(range(1, len(sections) + 1)) and len(sections) >= 8, sections
    assert any(s.startswith("## Summary") for s in md)


def test_exercises_are_checked_by_asserts():
    nb = nbformat.read(NB, as_version=4)
    cells = nb.cells
    exercises = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("**Exercise 7.")]
    assert len(exercises) >= 2
    for i in exercises:
        nxt = cells[i + 1]
        assert nxt.cell_type == "code" and re.search(r"^assert ", nxt.source, re.M), cells[i].source[:40]


def test_browser_ready_torch_only_in_the_guarded_cell():
    """Pyodide has numpy and matplotlib only: torch/triton may be imported only in the
    cell that first checks they exist (find_spec) and prints a skip line otherwise."""
    nb = nbformat.read(NB, as_version=4)
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        names = set()
        for node in ast.walk(ast.parse(c.source)):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
        if names & {"torch", "triton", "kernels"}:
            assert 'for m in ("torch", "triton") if importlib.util.find_spec(m) is None' in c.source
            assert 'print(f"skipped' in c.source
    script = ("import sys; sys.modules['torch'] = None; sys.modules['triton'] = None\n"
              "from mlacourse.engine import Engine, init_model, ModelConfig\n"
              "e = Engine(init_model(ModelConfig()), num_pages=4, page_size=4, token_budget=4)\n"
              "e.add_request([1, 2, 3], 2); print(e.run()['r0'].tokens)")
    res = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr


def test_chapter_runs_and_the_invariant_holds(executed):
    f = executed["figures"]["invariant"]
    assert f["max_logit_error"] < 1e-10 and f["damaged_error"] > 1e-6
    assert executed["seconds"] < 120, f"chapter 7 took {executed['seconds']:.0f} s"


def test_sharing_figures(executed):
    f = executed["figures"]["sharing"]
    n, s, p = f["n_requests"], f["system_len"], f["page_size"]
    stream = system_prompt_stream(n, s, CFG.vocab, seed=7)
    # after step 1: q0 has its prompt and 1 generated token cached, the others their prompts
    lens = sorted([len(stream[0][1]) + 1] + [len(x[1]) for x in stream[1:]])
    assert f["seqlens"] == lens
    unshared = sum(ceil_div(m, p) for m in lens)
    assert f["pages_unshared"] == unshared
    assert f["pages_shared"] == unshared - (n - 1) * (s // p)  # the shared full pages, stored once
    decodes = sum(x[2] - 1 for x in stream)  # every generated token but the last is fed back
    assert f["computed_unshared"] == sum(len(x[1]) for x in stream) + decodes
    assert f["computed_shared"] == len(stream[0][1]) + sum(len(x[1]) - s for x in stream[1:]) + decodes
    assert f["peak_shared"] >= f["pages_shared"] and f["peak_unshared"] >= f["pages_unshared"]
    kb = f["pages_shared"] * p * 2 * 20 * 8 / 1e3  # 2 layers x 20 float64 numbers per token
    mb_v3 = f["pages_shared"] * p * 61 * 576 * 2 / 1e6
    assert f"{kb:6.1f} KB here" in executed["text"] and f"{mb_v3:6.1f} MB at V3" in executed["text"]
    assert executed["figures"]["v3_system_prompt_saving_bytes"] == 99 * 2000 * 61 * 576 * 2
    assert "13.9 GB of cache" in executed["text"]


def test_fragmentation_figures(executed):
    f = executed["figures"]["fragmentation"]
    stream = random_stream(f["n_requests"], CFG.vocab, seed=f["seed"])
    for p, got in f["by_page"].items():
        p = int(p)
        eng = Engine(CFG, num_pages=24000 // p + 40, page_size=p, token_budget=256, share_prefixes=False,
                     compute=False, record_tables=False)
        submit(eng, stream)
        eng.run()
        stored = sum(sum(r.seqlens.values()) for r in eng.trace)
        waste = sum(ceil_div(m, p) * p - m for r in eng.trace for m in r.seqlens.values())
        assert got["stored"] == stored and got["allocated"] - got["stored"] == waste, p
        table = executed["text"].split("wasted / allocated", 1)[1]
        line = next(l for l in table.splitlines() if re.match(rf"\s+{p} ", l))
        assert f"{waste / got['allocated']:.1%}" in line and f"{(p - 1) / 2:.1f}" in line


def test_path_mix_figures(executed):
    from mlacourse.flops import V3_SHAPES, attention_flops

    for kind, got in executed["figures"]["mix"].items():
        eng = Engine(CFG, num_pages=4000, page_size=64, token_budget=2048, share_prefixes=False, compute=False,
                     record_tables=False, path_shapes=V3_SHAPES)
        submit(eng, mix_stream(kind))
        eng.run()
        want = dict(chosen=0, absorb=0, expand=0)
        for rec in eng.trace:
            for c in rec.chunks:
                fl = attention_flops(c.n, c.n_ctx, **V3_SHAPES)
                want["absorb"] += fl["absorb"]
                want["expand"] += fl["expand"]
                want["chosen"] += fl["absorb"] if c.kind == "decode" else min(fl.values())
        assert got["total"] == want, kind
        assert f"per-chunk choice {want['chosen'] / 1e12:.1f} T" in executed["text"]


def test_disaggregation_figures(executed):
    f = executed["figures"]["disaggregation"]
    assert f["bytes_per_token"] == 61 * (512 + 64) * 2 == 70_272
    assert f["bytes_moved"] == 70_272 * f["prompt_len"]
    assert "70,272 bytes" in executed["text"] and "287.8 MB" in executed["text"]
