"""The figures chapters 1-5 report, read back from what the executed
chapters printed and compared with (a) the formula in mlacourse and (b) where it is honest,
the number typed in from its published source (chapters 6-8 have their own files). Also,
for every chapter there is: every picture is drawn, every exercise runs clean unanswered
and its collapsed solution passes, text that introduces code is followed by it.

The chapters are executed once per session by tests/test_notebooks.run_chapter."""
import math
import re

import numpy as np
import nbformat
import pytest

from mlacourse import cache, flops, hardware, rope, step
from mlacourse.config import DEEPSEEK_V2, DEEPSEEK_V3
from classroom import execute
from tests.test_notebooks import NOTEBOOKS, OUTPUT_TEXT, run_chapter

V3 = DEEPSEEK_V3
CHAPTER = {p.name[:2]: p for p in NOTEBOOKS}


def printed(chapter: str) -> str:
    run_chapter(CHAPTER[chapter])
    return OUTPUT_TEXT[CHAPTER[chapter].name]


def grab(chapter: str, pattern: str, n: int = 1):
    """The numbers captured by `pattern` in the chapter's printed output (commas removed)."""
    m = re.search(pattern, printed(chapter), flags=re.M)
    assert m, f"chapter {chapter} printed nothing matching {pattern!r}"
    vals = [float(g.replace(",", "")) for g in m.groups()]
    return vals[0] if n == 1 else vals


# ---- chapter 1 ---------------------------------------------------------------------------

def test_ch1_bytes_per_token_per_layer_bar_values():
    assert grab("01", r"bytes per token per layer, MLA: ([\d,]+)") == cache.cache_bytes(cache.mla_elements(512, 64)) == 1152
    assert grab("01", r"bytes per token per layer, MLA FP8 \(FlashMLA row\): ([\d,]+)") == cache.fp8_mla_row_bytes() == 656


def test_ch1_capacity_table_uses_reported_mib():
    assert re.search(r"H800\s+80GB\s+81,559\s+85\.5e9", printed("01"))
    assert re.search(r"H200\s+141GB\s+143,771\s+150\.8e9", printed("01"))


def test_ch1_mha_cache_passes_an_h800_at_21k_tokens():
    real, naive = grab("01", r"passes an H800's memory at ([\d,]+) tokens \(reading '80 GB' as 80e9 bytes would give ([\d,]+)\)", 2)
    per_tok = cache.cache_bytes(cache.mha_elements(128, 128), n_layers=61)
    assert real == hardware.tokens_that_fit(per_tok, "H800") == (81_559 * 2**20) // (2 * 128 * 128 * 61 * 2) == 21_392
    assert naive == 80e9 // per_tok == 20_011


def test_ch1_mla_and_fp8_fill_an_h800():
    mla, fp8 = grab("01", r"The MLA cache fills an H800 at ([\d,]+) tokens; FP8 rows at ([\d,]+)", 2)
    assert mla == hardware.tokens_that_fit(cache.cache_bytes(576, n_layers=61), "H800") == (81_559 * 2**20) // 70_272
    assert fp8 == hardware.tokens_that_fit(656 * 61, "H800") == (81_559 * 2**20) // (656 * 61)


def test_ch1_the_93_3_percent():
    assert grab("01", r"67B as built \(GQA, 8 KV\):\s+([\d,]+)") == cache.gqa_elements(8, 128) * 95 == 194_560
    deployed = grab("01", r"reduction, V2 at 6 bits vs 67B in bf16: ([\d.]+)%")
    v2 = cache.mla_elements(DEEPSEEK_V2.d_latent, DEEPSEEK_V2.d_rope) * DEEPSEEK_V2.n_layers
    assert deployed == round(100 * (1 - v2 * 6 / (194_560 * 16)), 2) and round(deployed, 1) == 93.3  # V2 paper: 93.3%


def test_ch1_one_128k_sequence_is_a_tenth_of_an_h800():
    gb, share = grab("01", r"V3 MLA cache of one 131,072-token sequence: ([\d.]+) GB = ([\d.]+)% of an H800", 2)
    b = cache.cache_bytes(576, n_layers=61, n_tokens=131_072)
    assert gb == round(b / 1e9, 2) and share == round(100 * b / hardware.GPUS["H800"].hbm_bytes, 1)


def test_ch1_small_pages_waste_less_than_big_ones():
    small = grab("01", r"pages of 64 tokens \(FlashMLA\)\s+wastes\s+([\d.]+) GB")
    big = grab("01", r"pages of 4,096 tokens\s+wastes\s+([\d.]+) GB")
    assert small < big / 10
    page_mb = grab("01", r"one 4,096-token page, all 61 layers: ([\d.]+) MB")
    assert page_mb == round(4096 * 70_272 / 1e6)


# ---- chapter 2 ---------------------------------------------------------------------------

def test_ch2_query_rank_is_12_head_dims():
    assert "d_c'  = 1536 = 12 d_h   (3/2 d_h would be 192)" in printed("02")
    direct, low = grab("02", r"query weights per layer: direct ([\d.]+)M, low-rank path ([\d.]+)M", 2)
    assert direct == round(7168 * 128 * 192 / 1e6, 1) and low == round((7168 * 1536 + 1536 * 128 * 192) / 1e6, 1)


def test_ch2_yarn_scale():
    scale, factor = grab("02", r"with YaRN's m\^2: ([\d.]+) \(([\d.]+)x\)", 2)
    assert scale == round(rope.yarn_softmax_scale(192), 5) == round(192 ** -0.5 * (0.1 * math.log(40) + 1) ** 2, 5)
    assert factor == round((0.1 * math.log(40) + 1) ** 2, 4) == 1.8739


def test_ch2_rope_layout_bug_is_invisible_at_offset_zero_only():
    assert grab("02", r"^\s+0\s+([\d.]+)$") == 0.0
    assert grab("02", r"^\s+4096\s+([\d.]+)$") > 0.3


def test_ch2_absorption_error_grows_with_offset_only_without_decoupling():
    coupled, decoupled = grab("02", r"offset 32,768: coupled ([\d.e+-]+), decoupled ([\d.e+-]+)", 2)
    assert coupled > 0.5 and decoupled < 1e-12
    assert grab("02", r"offset      0: coupled ([\d.e+-]+)") < 1e-12


# ---- chapter 3 ---------------------------------------------------------------------------

def test_ch3_bf16_unit_roundoff_is_65536_times_float32s():
    ratio = grab("03", r"bf16 unit roundoff / float32 unit roundoff = 2\^-8 / 2\^-24 = ([\d,]+)")
    u32 = float(np.finfo(np.float32).eps) / 2
    assert ratio == 2.0 ** -8 / u32 == 65_536
    measured = grab("03", r"largest measured relative rounding error on 200,000 numbers = ([\d.e-]+)")
    assert 0.99 * 2.0 ** -8 < measured <= 2.0 ** -8
    torch = pytest.importorskip("torch")
    assert ratio == (torch.finfo(torch.bfloat16).eps / 2) / u32


def test_ch3_deepseek_layout_and_what_hf_caches():
    assert grab("03", r"vs mlacourse.layer.mla_forward: max rel. difference ([\d.e+-]+)") < 1e-12
    assert grab("03", r"Hugging Face DeepseekV3Attention cache: 128 x \(192 \+ 128\) = ([\d,]+)") \
        == cache.per_token_elements(V3, "mla_expanded") == 40_960
    assert grab("03", r"attention weights in fp8: ([\d.]+) MB") == round(step.attention_weight_bytes(V3, "fp8") / 1e6, 1)


def test_ch3_materialized_bytes_in_decode():
    mb = grab("03", r"decode: 1 new token, 32K cached, expand: ([\d,.]+) MB of intermediates")
    shapes = flops.materialized_shapes("expand", 1, 32768, **V3.attention_shapes)
    assert mb == round(2 * sum(np.prod(s) for s in shapes.values()) / 1e6, 1)


# ---- chapter 4 ---------------------------------------------------------------------------

def test_ch4_expanded_prefix_is_2_68_gb():
    gb, gib = grab("04", r"32,768-token prefix: ([\d.]+) GB = ([\d.]+) GiB", 2)
    b = cache.cache_bytes(cache.mla_expanded_elements(128, 128, 64, 128), n_tokens=32768)
    assert (gb, gib) == (round(b / 1e9, 2), round(b / 2**30, 2)) == (2.68, 2.5)


def test_ch4_repeated_crossover_is_reported_with_its_range():
    pred = grab("04", r"FLOP-predicted crossover at P=1024: n_new = ([\d.]+)")
    P, n_star = 1024, 512 / 3
    assert pred == round(math.sqrt((P + 0.5) ** 2 + 2 * n_star * P) - (P + 0.5), 1)
    text = printed("04")
    rows = re.findall(r"vs absorb: min\s+(\d+)\s+median\s+(\d+)\s+max\s+(\d+)", text)
    none = re.findall(r"vs absorb: no crossing in any round", text)
    assert len(rows) + len(none) == 2
    for lo, med, hi in rows:
        assert int(lo) <= int(med) <= int(hi)
    assert "median of 9 rounds" in text


# ---- chapter 5 ---------------------------------------------------------------------------

def test_ch5_attention_weights_per_layer():
    text = printed("05")
    assert re.search(r"total\s+187,107,328\s+= 187\.1M parameters per layer", text)
    fp8_mb, bf16_mb = grab("05", r"128x128 block\) ([\d.]+) MB, bf16 ([\d.]+) MB", 2)
    assert fp8_mb == round(step.attention_weight_bytes(V3, "fp8") / 1e6, 1) == 187.2
    assert bf16_mb == round(2 * 187_107_328 / 1e6, 1)
    tokens = grab("05", r"that layer's latent cache of ([\d,]+) tokens \s*\(1,152-byte bf16 rows\)")
    assert tokens == round(step.attention_weight_bytes(V3) / 1152) and 160_000 < tokens < 165_000


def test_ch5_core_intensity_is_flat_in_batch_and_the_step_is_not():
    rows = re.findall(r"^\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+\d+MB\s+\d+MB\s+\d+%$", printed("05"), flags=re.M)
    assert len(rows) == 7
    for b, core, st in rows:
        d = step.decode_step(V3, int(b), 4096)
        assert float(core) == round(d["core_intensity"], 1) == round(flops.decode_intensity_mla(s_k=4096), 1)
        assert float(st) == round(d["step_intensity"], 1)
    assert float(rows[0][2]) < 10 < 200 < float(rows[-1][2])


def test_ch5_tp_vs_dp_threshold_and_corrections():
    _, split = step.replicated_and_split_weight_bytes(V3)
    assert grab("05", r"fewer than S / 1152 = ([\d,]+) cached tokens") == round(split / 1152)
    thr, ds = grab("05", r"660 TFLOPS = (\d+)% of the throttled 865, (\d+)% of the datasheet 989\.4", 2)
    assert (thr, ds) == (round(100 * 660 / 865), round(100 * 660 / 989.4)) == (76, 67)
    ratio = grab("05", r"FlashMLA FP8 rows [\d,]+: ([\d.]+)x, not 2x")
    assert ratio == round(1152 / 656, 2) == 1.76
    assert grab("05", r"TP=4:\s+32 heads per GPU, intensity\s+([\d.]+)") == round(flops.decode_intensity_mla(h_q=32), 1) == 60.4


def test_ch5_flashmla_release_date():
    assert "FlashMLA released 2025-02-24 (Monday, day 1 of Open Source Week)" in printed("05")


# ---- pictures and exercises ---------------------------------------------------------------

@pytest.mark.parametrize("chapter", sorted(CHAPTER))
def test_every_picture_is_drawn(chapter):
    """As many pictures as the chapter's code shows (plt.show() calls), at least."""
    shows = sum(c.source.count("plt.show()") for c in nbformat.read(CHAPTER[chapter], as_version=4).cells
                if c.cell_type == "code")
    images = len(execute.images(run_chapter(CHAPTER[chapter])))
    assert shows and images >= shows, f"chapter {chapter} drew {images} pictures; its code shows {shows}"


@pytest.mark.parametrize("chapter", sorted(CHAPTER))
def test_exercises_run_unanswered_and_their_solutions_pass(chapter):
    """Each exercise's check says "not attempted yet" on the learner's cell and "correct" on
    the collapsed solution (the static part is tests/chapter_checklist.py's "exercises")."""
    nb = nbformat.read(CHAPTER[chapter], as_version=4)
    labels = re.findall(r"\*\*Exercise (\d+\.\d+)", "\n".join(c.source for c in nb.cells if c.cell_type == "markdown"))
    assert labels, f"chapter {chapter} has no exercises"
    text = printed(chapter)
    for label in labels:
        assert f"Exercise {label}: not attempted yet" in text
        assert f"Exercise {label}: correct" in text


# ---- claims that are easy to get wrong or loose, and text that must come in order ---------------

def _cells(chapter):
    return nbformat.read(CHAPTER[chapter], as_version=4).cells


def _markdown(chapter):
    return "\n".join(c.source for c in _cells(chapter) if c.cell_type == "markdown")


@pytest.mark.parametrize("chapter", sorted(CHAPTER))
def test_text_that_introduces_code_is_followed_by_it(chapter):
    """A markdown cell that ends with a colon ("Computing that expression:") introduces the
    next cell, which must be that code -- not an exercise or another subsection."""
    cells = _cells(chapter)
    for i, c in enumerate(cells[:-1]):
        if c.cell_type == "markdown" and c.source.rstrip().endswith(":"):
            assert cells[i + 1].cell_type == "code", (chapter, c.source.rstrip()[-70:])


def test_sections_are_not_split_by_exercises_or_each_other():
    cells = _cells("03")
    heads = {m: i for i, c in enumerate(cells) if c.cell_type == "markdown"
             for m in re.findall(r"^## (3\.\d)", c.source, re.M)}
    assert cells[heads["3.4"] + 1].cell_type == "code"  # §3.4's text, then its code (not Exercise 3.1)
    conclusion = next(i for i, c in enumerate(cells) if c.source.startswith("Folding is exact, but at V3 shapes"))
    assert heads["3.6"] < conclusion < heads["3.7"]     # §3.6's conclusion before §3.7
    assert heads["3.5"] < next(i for i, c in enumerate(cells) if "**Exercise 3.2" in c.source) < heads["3.6"]


def test_ch1_questions_and_the_seed_faults_it_names():
    intro = _cells("01")[0].source
    asked = re.findall(r"^\d+\. ", intro, re.M)
    words = {5: "five", 6: "six", 7: "seven", 8: "eight"}
    assert f"answer all {words[len(asked)]}" in intro
    md = _markdown("01")
    assert "quoted in §1.2's table notes" not in md
    assert "only slightly less than MHA's 32,768" in md and "it is 25% more" in md
    assert cache.mla_expanded_elements(128, 128, 64, 128) / cache.mha_elements(128, 128) == 1.25


def test_ch2_and_ch3_say_when_yarn_scales_the_softmax():
    for chapter in ("02", "03"):
        assert "beyond 4K multiplies" not in _markdown(chapter) and "beyond 4K" not in printed(chapter)
    assert "at every position" in _markdown("02").split("## Summary")[1]
    assert "at every position when served past 4K" in printed("03")


def test_ch3_fp8_weights_are_dequantized_to_bf16_by_default():
    md = _markdown("03")
    assert "Most layers multiply in FP8 directly" not in md
    assert '`gemm_impl`, which is `"bf16"` by default' in md and "`fp8_gemm`" in md


def test_ch3_absorb_decode_is_mostly_the_score_matrix():
    total, scores = grab("03", r"decode over 32K by absorb: ([\d.]+) MB, of which the score matrix ([\d.]+) MB", 2)
    shapes = flops.materialized_shapes("absorb", 1, 32768, **V3.attention_shapes)
    assert total == round(sum(2 * math.prod(s) for s in shapes.values()) / 1e6, 1) == 8.7
    assert scores == round(2 * 128 * 32768 / 1e6, 1) and "64 KiB per head" in printed("03")
    assert "absorb builds a few kilobytes per head; the score matrix is the only large array" not in _markdown("03")


def test_ch3_vllm_merge_is_stale_and_hugging_face_dates():
    assert "early vLLM's merged W_UV_O (128, 512, 7168) = 469.8M numbers per layer" in printed("03")
    md = _markdown("03")
    for date in ("2024-05-06", "2025-03-28", "2025-07-09"):
        assert date in md
    assert "`VLLM_MLA_PERFORM_MATRIX_ABSORPTION`" in md and "`_v_up_proj`" in md


def test_ch5_weights_against_the_cache_per_layer_and_per_model():
    w = step.attention_weight_bytes(V3)
    per_layer = grab("05", r"that layer's latent cache of ([\d,]+) tokens")
    whole = grab("05", r"one layer's weights are ([\d,]+) tokens")
    assert per_layer == round(w / 1152) and whole == round(w / 70_272) == 2_663
    summary = _markdown("05").split("## Summary")[1]
    assert "~162K tokens (1,152 bytes each)" in summary and "~2,660 tokens" in summary


def test_ch5_deepseek_overview_date_and_prefill_parallelism():
    md = _markdown("05")
    assert "February 2025" not in md and "2025-03-01" in md and "DP32" in md and "DP144" in md


def test_ch6_title_and_ch7_decode_bound():
    assert "(second edition)" not in _cells("06")[0].source
    ch7 = nbformat.read(CHAPTER["07"], as_version=4)
    md7 = "\n".join(c.source for c in ch7.cells if c.cell_type == "markdown")
    assert "Prefill is compute-bound and decode memory-bound (chapter 5)" not in md7
    # chapter 5's figures the corrected sentence leans on: the core at the H800 knee, past the H200's
    assert flops.decode_intensity_mla() < hardware.GPUS["H800"].ridge() and flops.decode_intensity_mla() > hardware.GPUS["H200"].ridge()
