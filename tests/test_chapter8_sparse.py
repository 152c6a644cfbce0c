"""Chapter 8's section 8.2 (sparse MLA decode): every figure it prints agrees with the
course's formulas (mlacourse.sparse) or, where the figure is published, with the number
typed in from its source; its exercises are real. (tests/test_notebooks.py executes the
chapter; tests/test_chapter8.py runs it without torch, as the browser does.)"""
import dataclasses
import re
import sys
from pathlib import Path

import nbformat
import pytest

from mlacourse import cache, flops
from mlacourse import sparse as S
from tests.test_notebooks import OUTPUT_TEXT, run_chapter

DRAFT = Path(__file__).resolve().parent.parent / "notebooks" / "08_flashmla_next.ipynb"


def printed() -> str:
    nb = run_chapter(DRAFT)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{errors[0]['ename']}: {errors[0]['evalue']}"
    return OUTPUT_TEXT[DRAFT.name]


def grab(pattern: str):
    m = re.search(pattern, printed(), flags=re.M)
    assert m, f"chapter 8 printed nothing matching {pattern!r}"
    vals = [float(g.replace(",", "")) for g in m.groups()]
    return vals[0] if len(vals) == 1 else vals


def test_the_section_sits_in_chapter_8():
    nb = nbformat.read(DRAFT, as_version=4)
    heads = [c.source.splitlines()[0] for c in nb.cells if c.cell_type == "markdown"]
    assert "## 8.2 Sparse MLA decode: DeepSeek Sparse Attention" in heads
    assert "placeholder" not in "".join(c.source.lower() for c in nb.cells)


def test_cache_bytes_and_per_token_costs():
    assert grab(r"index key 132 B = (\d+) B") == cache.fp8_mla_row_bytes() + S.DSA_V32.index_key_bytes == 788
    assert grab(r"over 61 layers: ([\d,]+) B per token") == 61 * 788
    mla, idx = grab(r"MLA ([\d,]+) \(bf16 MMAs\) vs indexer ([\d,]+) \(FP8")
    assert mla == flops.decode_flops(128, 1, 1, 576, 512) == 278_528 and idx == S.indexer_flops(1) == 16_512
    assert grab(r"(\d+\.\d)x less tensor-core time") == round(2 * 278_528 / 16_512, 1)
    assert grab(r"indexer 140 \(132 key \+ 8 logits\): (\d+\.\d)x fewer") == round(656 / 140, 1)


def test_the_rope_layout_demonstration():
    right, wrong = grab(r"rotate-half \(trained\) : +(\d+) of 40"), grab(r"interleaved \(MLA's\) +: +(\d+) of 40")
    assert right == 40 and wrong == 10
    share, times = grab(r"MLA's layout finds (\d+)% of the needles: ([\d.]+) times the 12.5% of chance")
    assert share == 100 * wrong / 40 == 25 and times == (wrong / 40) / (2048 / 16384) == 2.0


def test_the_indexer_fp8_path():
    dot, rotated = grab(r"q \. k = (-?[\d.]+); \(Hq\) \. \(Hk\) = (-?[\d.]+)")
    assert dot == rotated
    before, after = grab(r"largest entry / RMS of the key: ([\d.]+) before, ([\d.]+) after")
    assert after < before / 2
    md = "".join(c.source for c in nbformat.read(DRAFT, as_version=4).cells if c.cell_type == "markdown")
    for needle in ("k_norm", "rotate_activation", "ue8m0", "weights_proj", "can be negative"):
        assert needle in md, needle
    assert "The ReLU keeps a head from voting *against* a token" not in md


def test_addressing_examples():
    assert "physical: [[[21, 28, 9, -1]], [[17, -1, 2, 18]]]" in printed()
    assert grab(r"% 64 = (\d+): FlashMLA") == (2**32 - 1) % 64 == 63
    # the September 2025 kernels: C's signed division truncates toward zero, (-1 + 64) % 64 = 63
    assert "-1/64 = 0, (-1+64) % 64 = 63" in printed()
    assert "neither -1 nor a row 0..15" in printed()


def test_the_step_table_and_the_roofline_points():
    row = re.search(r"^ +131,072 \|.*\| +(\d+\.\d\d)x$", printed(), flags=re.M)
    want = S.dense_step_seconds(131072, "H800") / S.sparse_step_seconds(131072, "H800")["total"]
    assert row and float(row.group(1)) == round(want, 2)
    assert grab(r"dense decode, s_k = 32K +: +(\d+\.\d) FLOP/byte") == round(
        flops.decode_flops(128, 1, 32768, 576, 512) / flops.decode_bytes(128, 1, 32768, 576, 512, kv_row_bytes=656), 1)
    assert grab(r"sparse attention, top-2048 +: +(\d+\.\d)") == round(
        S.sparse_attention_flops(128, 1, 2048) / S.sparse_attention_bytes(128, 1, 2048), 1)
    assert grab(r"indexer, s_k = 32K +: +(\d+\.\d)") == round(S.indexer_flops(32768) / S.indexer_bytes(32768), 1)


def test_crossovers():
    h800, h200 = grab(r"from s_k = ([\d,]+) on an H800 and ([\d,]+) on an H200")
    assert (h800, h200) == (S.sparse_break_even("H800"), S.sparse_break_even("H200")) == (2426, 2299)
    assert grab(r"no logits round trip\): ([\d,]+)") == S.sparse_break_even("H800", logits_round_trip=False)
    assert grab(r"bandwidth cancels\): ([\d,]+)") == S.sparse_break_even("H200", h_q=16)
    # published: FlashMLA's blog, 410 TFLOPS sparse (top-k 2048) and 640 dense on an H800
    assert grab(r"2048 x 640 / 410 = ([\d,]+)") == round(2048 * 640 / 410) == 3197
    # like with like: FlashMLA's benchmark setting s_q = 2, and kernel against kernel (no indexer)
    assert grab(r"at s_q = 2 \(FlashMLA's benchmark setting\): ([\d,]+) on an H800 and ([\d,]+) on an H200") == [
        S.sparse_break_even("H800", s_q=2), S.sparse_break_even("H200", s_q=2)] == [2242, 2180]
    assert grab(r"sparse ahead from s_k = ([\d,]+) \(s_q = 1\) and ([\d,]+) \(s_q = 2\)") == [2049, 2049]
    rated, rated_idx = grab(r"sparse ahead from ([\d,]+) without the indexer, ([\d,]+) with it")
    assert rated == 3197 and rated_idx == S.sparse_break_even("H800", s_q=2, dense_tflops=640, sparse_tflops=410) > 3000
    md = "".join(c.source for c in nbformat.read(DRAFT, as_version=4).cells if c.cell_type == "markdown")
    assert "DeepSeek's own kernels cross later" not in md and "**The break-even**" in md


def test_dsm_crossover_clock_counts():
    # FlashMLA's blog: 64 heads x (576 + 512) x 2 / 4096 = 34 clocks of MMA,
    # (1/64 + 1/64 + 1/16 + 1/256) x 512 = 50 of dequantization
    mma, deq, deq2 = grab(r"MMA (\d+) clocks; dequantizing 512 e4m3 values (\d+) clocks alone, (\d+) with the two-CTA")
    assert (mma, deq, deq2) == (64 * 1088 * 2 / 4096, (1 / 64 + 1 / 64 + 1 / 16 + 1 / 256) * 512, 25)
    assert grab(r"tensor cores busy at most (\d+)% without the crossover, (\d+)% with it") == [68, 100]


def test_flashmla_today_formats_and_sink():
    assert re.search(r"^V32_FP8Sparse\s+576\s+656\s+4 x float32\s+41,984\s+656\.0$", printed(), re.M)
    # MODEL1: 448 + 2*64 + 7 + 1 = 584 bytes; a 64-token block padded to a multiple of 576 bytes
    assert re.search(rf"^MODEL1_FP8Sparse\s+512\s+584\s+7 x UE8M0\s+{-(-64 * 584 // 576) * 576:,}\s+585\.0$",
                     printed(), re.M)
    assert grab(r"a seventh logit with a zero value gives the same output \(max difference ([\d.e+-]+)\)") < 1e-12
    md = "".join(c.source for c in nbformat.read(DRAFT, as_version=4).cells if c.cell_type == "markdown")
    for needle in ("attn_sink", "extra_k_cache", "topk_length", "FlashMLASchedMeta", "contiguously valid",
                   "350 TFlops on B200", "1,450", "2026-09-30", "sgl-project/sglang #38942"):
        assert needle in md, needle


def test_gathers():
    assert grab(r"2,048 random rows \(top-k\) +: (\d\.\d+)") == pytest.approx(672 / 656, abs=2e-3)
    assert grab(r"32 random pages of 64 rows +: (\d\.\d+)") == 1.0
    assert grab(r"one isolated row: (\d\.\d+) \(32-byte") == round(672 / 656, 4)
    assert grab(r"sectors\), (\d\.\d+) \(64-byte\)") == round(704 / 656, 4)


def test_exercises_unanswered_then_solved():
    text = printed()
    for label in ("8.3", "8.4"):
        assert f"Exercise {label}: not attempted yet" in text and f"Exercise {label}: correct" in text
    assert grab(r"Exercise 8.3: correct \(([\d,]+)\)") == S.sparse_break_even(
        "H200", cfg=dataclasses.replace(S.DSA_V32, index_topk=1024))
    assert grab(r"Exercise 8.4: correct \((\d+)\)") == 9 * 64 + 200 % 64


def test_exercise_checks_can_fail():
    """A wrong answer in the section's exercise cells raises (the check is real)."""
    nb = nbformat.read(DRAFT, as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    cells = [c for c in code if c.startswith("answer = ...") and ('check("8.3"' in c or 'check("8.4"' in c)]
    assert len(cells) == 2
    ns = {}
    setup = [code[0], next(c for c in code if c.startswith("import dataclasses"))]  # chapter + section imports
    for src in setup:
        exec("\n".join(x for x in src.splitlines() if not x.startswith("%")), ns)  # noqa: S102
    for src in cells:
        with pytest.raises(AssertionError, match="is not right"):
            exec(src.replace("answer = ...", "answer = 12345", 1), ns)  # noqa: S102


@pytest.mark.skipif("torch" not in sys.modules and not __import__("importlib").util.find_spec("torch"),
                    reason="needs torch")
def test_the_kernel_cell_ran_here():
    assert re.search(r"measured \(correctness only\): .* (\d+) of \1 outputs within tolerance", printed())
