"""Chapter 8 (the seesaw, batch invariance, the first GPU run): it executes (tests/test_notebooks.py
runs it once per session), every figure it prints is re-derived here from mlacourse and the
recorded compile report, it says which figures are published, modelled and measured, and it
runs without torch and triton (the browser). Its pictures and exercises are checked with
every chapter's (tests/test_chapter_figures.py, tests/chapter_checklist.py)."""
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from classroom import execute
from mlacourse import batch_invariance as bi
from mlacourse import schedule
from mlacourse import seesaw as ss
from tests.test_notebooks import EXECUTION_TIMES, OUTPUT_TEXT, run_as_in_browser, run_chapter

ROOT = Path(__file__).resolve().parent.parent
NB = ROOT / "notebooks" / "08_flashmla_next.ipynb"


def printed() -> str:
    run_chapter(NB)
    return OUTPUT_TEXT[NB.name]


def grab(pattern: str, n: int = 1):
    m = re.search(pattern, printed(), flags=re.M)
    assert m, f"chapter 8 printed nothing matching {pattern!r}"
    vals = [float(g.replace(",", "")) for g in m.groups()]
    return vals[0] if n == 1 else vals


def test_structure_and_first_cell():
    nb = nbformat.read(NB, as_version=4)
    assert nb.cells[0].source.startswith("# Chapter 8 — ")
    assert "**Questions this chapter answers**" in nb.cells[0].source
    first = next(c for c in nb.cells if c.cell_type == "code").source
    assert first.startswith("import os  # one BLAS thread") and "%matplotlib inline" in first
    heads = [ln for c in nb.cells if c.cell_type == "markdown" for ln in c.source.splitlines() if ln.startswith("## ")]
    assert heads[:4] == ["## 8.1 The seesaw: overlapping the softmax with the matrix products",
                         "## 8.2 Sparse MLA decode: DeepSeek Sparse Attention", "## 8.3 Batch invariance", "## 8.4 Before the first GPU run"]
    assert "## Summary" in heads and "Next:" in nb.cells[-1].source and "**Practice**" in nb.cells[-1].source


def test_register_wall():
    assert grab(r"64 x 512 fp32 accumulator: ([\d,]+) registers = 50% of an SM's 65,536") == 64 * 512 == 32_768
    assert grab(r"held by one warpgroup: (\d+) registers per thread") == 256 > ss.MAX_REGS_PER_THREAD
    assert grab(r"FA3 ping-pong, two outputs: ([\d,]+) registers = 100% of the SM") == ss.REGS_PER_SM
    used, left = grab(r"= (\d+); (\d+) left for addresses", 2)
    assert (used, left) == (ss.REGISTER_LAYOUTS[2].used, ss.REGISTER_LAYOUTS[2].left) == (182, 73)


def test_exactness_figures():
    assert grab(r"seesaw order with the factor exp\(m - m_new\): max \|out - attention\| = ([\d.e+-]+)") < 1e-12
    assert grab(r"the factor as printed, exp\(m_new - m\), on scores scaled by 0.05: max \|out - attention\| = "
                r"([\d.]+)") > 0.1
    assert grab(r"worst difference over out and lse: ([\d.e+-]+)") < 1e-6
    assert "   0   -  -             m = -inf" in printed() and "  11   0  CUDA + tensor O_L = a1 O_L + P1 V1L" in printed()


def test_cost_table_and_model():
    c = ss.SMCosts()
    assert grab(r"= ([\d.]+) TFLOPS \(the datasheet's dense bf16 peak\)") == round(4096 * 132 * 1.83e9 / 1e12, 1)
    assert grab(r"exp2 16/clock \(= ([\d.]+) TFLOPS") == round(16 * 132 * 1.83e9 / 1e12, 2)
    for label, want in (("QK\\^T, 64 rows x 64 keys x 576", c.mma(64, 64, 576)), ("PV, one half", c.mma(64, 256, 64)),
                        ("row max of S", c.rowmax(4096)), ("exp2 \\+ FP32 work of S", c.exp(4096)),
                        ("rescale of an O half", c.scale(64 * 256))):
        assert grab(rf"^\s+{label}.*?\s(\d+) clocks$") == round(want)
    assert grab(r"tensor-core work per 64-key block: (\d+) clocks") == 1152 + 2 * 512
    runs = ss.run_schedules(16)
    for name in ("serial", "ping-pong \\(if registers allowed\\)", "seesaw"):
        span, util, gain = grab(rf"^{name}\s+([\d,]+) clocks for 16 blocks, tensor cores busy\s+([\d.]+)%, ([\d.]+)x", 3)
        t = runs[name.replace("\\", "")]
        assert span == round(t.makespan) and util == round(100 * t.tensor_utilization, 1)
        assert gain == round(runs["serial"].makespan / t.makespan, 3)
    model, published = grab(r"modelled seesaw gain over serial: ([\d.]+)x; .* = ([\d.]+)x", 2)
    assert published == round(660 / 580, 3) == 1.138 and model == round(runs["serial"].makespan /
                                                                           runs["seesaw"].makespan, 3)
    assert grab(r"published: 660 TFLOPS = (\d+)% of the throttled 865") == round(100 * 660 / 865) == 76


def test_version6_figures_come_from_the_compile_report():
    total = grab(r"total\s+([\d,]+) B of the 232,448")
    assert total == 64 * 576 * 2 + 2 * 64 * 576 * 2 + 8 * 64 * 4 + 16 * 8 == 223_360
    bench = (ROOT / "kernels" / "BENCHMARKS.md").read_text()
    rows = re.findall(r"^\| seesaw bf16 BLOCK_M=64 \| 64 x 64 \| 4\+4 \| 1 \| (\d+) \| (\d+) \| (\d+)/(\d+) \|", bench,
                      flags=re.M)
    assert len(rows) == 2
    for tri, (shared, regs, st, ld) in zip(("3.9", "3.6"), rows):
        line = re.search(rf"triton {tri}: warps 4\+4, shared ([\d,]+) B, (\d+) registers, spills (\d+)/(\d+) B",
                         printed()).groups()
        assert [int(x.replace(",", "")) for x in line] == [int(shared), int(regs), int(st), int(ld)]
        assert int(shared) >= total
    assert "status: compiled for sm_90, not yet run on a GPU" in printed()


def test_version6_register_split_comes_from_the_recorded_compile():
    """The partitions' floors, shares, registers named and spills, as mlacourse.seesaw records what
    ptxas made (tests/test_kernel_compile.py checks the record against the compiler)."""
    for p in ss.seesaw_partitions("3.6.0"):
        line = re.search(rf"^{re.escape(p.name)}: floor .* = (\d+); compiled \(triton 3.6\): setmaxnreg (\d+), (\d+) "
                         rf"registers named \((\d+) beyond the floor\), (\d+) spill", printed(), flags=re.M)
        assert line, p.name
        assert [int(x) for x in line.groups()] == [p.floor, p.setmaxnreg, p.registers_named, p.beyond_floor,
                                                   p.loop_local_ops]
    assert grab(r"warpgroup 0 gets (\d+) \(2 x 255 - 248") == ss.register_split(255, 248)["default"] == 256
    per_tile = [n // 2 for n in ss.COMPILED_V6["3.6.0"]["loop_instructions"]]
    assert grab(r"per tile \(triton 3.6\): warpgroup 0 (\d+), warpgroup 1 (\d+)", 2) == per_tile


def test_the_census_and_the_budget_are_benchmarks_md():
    """The sparse kernel's dequantization census and the GPU check's projected budget, as
    kernels/BENCHMARKS.md records them with their commands."""
    bench = (ROOT / "kernels" / "BENCHMARKS.md").read_text()
    instr, conv = (int(x) for x in re.search(r"(\d+) SASS\s+instructions per thread per tile, of which (\d+) are "
                                             r"conversions", bench).groups())
    assert grab(r"the KV loop, per thread per tile: ([\d,]+) instructions, (\d+) conversions", 2) == [instr, conv]
    per_row = int(re.search(r"about ([\d,]+) thread-instructions per cache row", bench).group(1).replace(",", ""))
    assert grab(r"/ 32 rows = ([\d,]+) thread-instructions") == per_row
    budget = int(re.search(r"Projected total: \*\*(\d+) s\*\* of the 480 s budget", bench).group(1))
    assert grab(r"projected by its dry run: (\d+) s of the 480 s budget") == budget < 480


def test_batch_invariance_figures():
    rng = np.random.default_rng(0)
    others = schedule.lengths_flashmla(rng, 254, 8192, 1)
    lens_a = np.concatenate([[20_000], others[:127]])
    lens_b = np.concatenate([others[127:187], [20_000], others[187:]])
    pa = bi.pieces_of(schedule.plan_decode(lens_a, 128, 1, 132), 0, 20_000)
    pb = bi.pieces_of(schedule.plan_decode(lens_b, 128, 1, 132), 60, 20_000)
    assert f"batch A cuts it at {pa}" in printed() and f"batch B cuts it at {pb}" in printed() and pa != pb
    n_diff, of, most = grab(r"batch A vs batch B: ([\d,]+) of ([\d,]+) values differ, by at most ([\d.e+-]+)", 3)
    assert of == 16 * 512 and 0 < n_diff <= of and 0 < most < 1e-5
    assert grab(r"uncut, in either batch: (\d+) values differ") == 0
    assert grab(r"worst \|out - float64\| = ([\d.e+-]+)") < 1e-5
    lens_8k = schedule.lengths_flashmla(np.random.default_rng(0), 128, 8192, 1)
    skewed = np.array([1] * 127 + [16384])
    for label, lens in (("FlashMLA lengths, mean 8K", lens_8k), ("one 16K among 127 ones", skewed)):
        for h in (16, 128):
            cut, whole, pieces = grab(rf"^{label}\s+{h}\s+([\d.]+)\s+([\d.]+)\s+(\d+)$", 3)
            a = schedule.schedule_stats("planned", lens, h, 1)
            b = schedule.schedule_stats("planned", lens, h, 1, batch_invariant=True)
            assert (cut, whole, pieces) == (round(a.imbalance, 3), round(b.imbalance, 3), a.splits)
            assert whole > cut


def test_kernel_cell_when_torch_and_triton_are_here():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    text = printed()
    m_false = re.search(r"batch_invariant=False: cut at (\[.*?\]) in batch A, (\[.*?\]) in B; out differs in ([\d,]+) "
                        r"of ([\d,]+) values, lse in (\d+) of 16", text)
    m_true = re.search(r"batch_invariant=True : cut at (\[.*?\]) in batch A, (\[.*?\]) in B; out differs in ([\d,]+) "
                       r"of ([\d,]+) values, lse in (\d+) of 16", text)
    assert m_false and m_true
    import ast

    from kernels.sparse_decode import default_topk_splits
    pieces = re.search(r"pieces per top-k list by query tokens in the batch .*?: (\{.*?\}); one piece from (\d+)", text)
    assert pieces and ast.literal_eval(pieces.group(1)) == {t: default_topk_splits(t, 1, 128, 2048, 132, 64, 32)
                                                            for t in (1, 2, 33, 65, 66, 128)}
    assert m_false.group(1) != m_false.group(2) and int(m_false.group(3).replace(",", "")) > 4096  # most of out moves
    assert m_true.group(1) == m_true.group(2) and m_true.group(3) == "0" and m_true.group(5) == "0"


def test_resident_programs_and_two_per_sm():
    assert grab(r"programs per SM: 16-row tile (\d+), 64-row tile (\d+)", 2) == [
        schedule.resident_programs(56_320, 189, 4), schedule.resident_programs(147_456, 255, 8)] == [2, 1]
    lens_8k = schedule.lengths_flashmla(np.random.default_rng(0), 128, 8192, 1)
    one, two = grab(r"^FlashMLA lengths, mean 8K\s+h_q=16: busiest SM / mean ([\d.]+) with 132 parts, ([\d.]+) with", 2)
    assert one == round(schedule.schedule_stats("planned", lens_8k, 16, 1).imbalance, 3)
    assert two == round(schedule.schedule_stats("planned", lens_8k, 16, 1, programs_per_sm=2).imbalance, 3)


def test_published_modelled_measured_table():
    nb = nbformat.read(NB, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "### Published, modelled, measured" in text
    for kind in ("| published |", "| modelled |", "| measured |", "| computed |"):
        assert kind in text, kind
    assert "not yet run on a GPU" in text and "enable_batch_invariant" in text


def test_a_wrong_exercise_answer_fails():
    from mlacourse.exercises import check
    with pytest.raises(AssertionError, match="Exercise 8.1"):
        check("8.1", 73, ss.register_budget("d_v = 768", 2, 384).left)  # the d_v = 512 figure is not the answer


def test_under_a_minute():
    run_chapter(NB)
    assert EXECUTION_TIMES[NB.name] < 60, f"chapter 8 took {EXECUTION_TIMES[NB.name]:.0f} s (budget 60 s)"


def test_runs_without_torch_and_triton():
    """The browser has numpy and matplotlib only: every cell runs (tests/test_browser_ready.py),
    the kernel cell says it is skipped, and the pictures are still drawn."""
    nb = run_as_in_browser(NB)
    assert not execute.errors(nb)
    text = execute.printed(nb)
    assert "torch: False, triton: False" in text and "(skipped: this cell needs torch and triton" in text
    assert len(execute.images(nb)) >= 3


def test_fixed_size_cuts_table():
    """Busiest SM's work relative to the planner's, re-derived from mlacourse.schedule."""
    lens_8k = schedule.lengths_flashmla(np.random.default_rng(0), 128, 8192, 1)
    skewed = np.array([1] * 127 + [16384])
    for label, lens in (("FlashMLA lengths, mean 8K", lens_8k), ("one 16K among 127 ones", skewed)):
        for h in (16, 128):
            plan = schedule.schedule_stats("planned", lens, h, 1).work_max
            whole = schedule.schedule_stats("planned", lens, h, 1, batch_invariant=True).work_max
            fx = [schedule.schedule_stats("fixed", lens, h, 1, split_blocks=s // 64).work_max
                  for s in (256, 1024, 4096)]
            row = rf"^{label}\s+{h}\s+{plan:.0f}\s+{whole / plan:.2f}x\s+" + r"\s+".join(f"{w / plan:.2f}x" for w in fx)
            assert re.search(row, printed(), re.M), row
    assert "GEMMs" in "".join(c.source for c in nbformat.read(NB, as_version=4).cells if c.cell_type == "markdown")
