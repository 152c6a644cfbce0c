"""Chapter 9 (the expand path's prefill kernel): every figure it prints agrees with the course's
formulas (mlacourse.prefill, mlacourse.flops) or, where it is recorded or published, with the
record (kernels/BENCHMARKS.md) and the number typed in from its source. The chapter is executed
once per session by tests/test_notebooks.run_chapter (tests/test_browser_ready.py runs it without
torch, as the browser does)."""
import importlib.util
import re
from pathlib import Path

import pytest

from mlacourse import flops
from mlacourse import prefill as P
from mlacourse.hardware import GPUS
from tests.test_notebooks import OUTPUT_TEXT, run_chapter

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = ROOT / "notebooks" / "09_prefill_kernel.ipynb"
RUNS_KERNELS = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("triton") is not None


def printed() -> str:
    nb = run_chapter(CHAPTER)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{errors[0]['ename']}: {errors[0]['evalue']}"
    return OUTPUT_TEXT[CHAPTER.name]


def grab(pattern: str):
    m = re.search(pattern, printed(), flags=re.M)
    assert m, f"chapter 9 printed nothing matching {pattern!r}"
    vals = [float(g.replace(",", "")) for g in m.groups()]
    return vals[0] if len(vals) == 1 else vals


def test_the_extend_sits_after_its_prefix():
    assert "keys each query of the extend sees: [10, 11, 12, 13]" in printed()
    assert P.visible_keys(4, 13).tolist() == [10, 11, 12, 13]
    assert grab(r"chapter 4's attend_expand \(max \|difference\| ([\d.e+-]+)\)") < 1e-12


def test_the_tile_schedule():
    text = printed()
    for name, (n_q, n_k) in {"fresh prompt: 512 tokens": (512, 512), "extend: 192 new after 320 cached": (192, 512),
                             "short extend: 40 new after 471": (40, 511)}.items():
        c = P.tile_counts(n_q, n_k, 64, 32)
        want = (f"{name:34s} {c['all']:4d} tiles: {c['full']:3d} whole, {c['masked']:3d} masked, "
                f"{c['skipped']:3d} skipped")
        assert want in text, want
    loaded, total, whole, masked, by_hand = grab(r"version 2 loads ([\d,]+) of ([\d,]+) tiles \(([\d,]+) whole, "
                                                 r"(\d+) masked\); by hand ([\d,]+)")
    c = P.tile_counts(8192, 8192, 128, 64)
    assert (loaded, total, whole, masked) == (c["loaded"], c["all"], c["full"], c["masked"]) == (4160, 8192, 4032, 128)
    assert by_hand == sum(2 * (b + 1) for b in range(64))
    ext = P.tile_counts(2048, 32768, 128, 64)
    assert grab(r"2,048 new tokens after 30,720 cached: ([\d,]+) of") == ext["loaded"]


def test_the_compile_report_is_read_not_invented():
    """The shared memory the chapter derives from the tile shapes equals what BENCHMARKS.md
    records; every register and spill figure it prints is the recorded one."""
    text = printed()
    bench = (ROOT / "kernels" / "BENCHMARKS.md").read_text()
    section = bench.split("## Prefill", 1)[1]
    for label, derived in (("prefill_tiled bf16 BLOCK_M=64", 64 * 192 * 2 + 64 * 320 * 2),
                           ("prefill_causal bf16 BLOCK_M=128", 128 * 192 * 2 + 3 * 64 * 320 * 2),
                           ("prefix_expand bf16", 3 * (64 * 64 + 2 * 64 * 128) * 2)):
        recorded = re.findall(rf"^\| {re.escape(label)} \| [^|]+ \| \d+ \| \d+ \| (\d+) \| (\d+) \| ([\d/]+) \|",
                              section, re.M)
        assert len(recorded) == 2 and all(int(s) == derived for s, _, _ in recorded), (label, recorded)
        for shared, regs, spills in recorded:
            assert re.search(rf"^{re.escape(label)}\s+3\.\d\.0\s+\d+\s+\d+\s+{derived:,}\s+{derived:,}\s+{regs}\s+{spills}",
                             text, re.M), label
    if RUNS_KERNELS and "could not compile" not in text:
        shared, regs = grab(r"compiled for sm_90 here by triton [\d.]+ in [\d.]+ s: ([\d,]+) B shared, (\d+) registers")
        assert shared == 172_032 and "the same as kernels/BENCHMARKS.md records" in text


def test_the_workspace_figures():
    assert grab(r"= ([\d,]+) B, (\d+)x the 1,152-byte latent row") == [P.expanded_kv_bytes(1), 71]
    gb, latent = grab(r"expanded at once: ([\d.]+) GB for one layer .* over all 61 layers \(([\d.]+) GB\)")
    assert gb == round(P.whole_prefix_expansion_bytes(131072) / 1e9, 1) == 10.7
    assert latent == round(131072 * 1152 * 61 / 1e9, 1)
    ws = P.chunked_prefix_workspace(4096, 8192)
    parts = grab(r"prefix K/V ([\d,]+) MiB, new K/V ([\d,]+) MiB, partials ([\d,]+) MiB, total ([\d,]+) MiB")
    assert parts == [ws[k] / 2**20 for k in ("prefix K/V", "new K/V", "partials", "total")] == [320, 640, 1032, 1992]
    assert grab(r"= ([\d,]+) tokens for any max_model_len") == P.vllm_context_chunk_tokens(8192, 1, 16) == 65536
    mib, k, v, kv = grab(r"= (\d+) MiB; the chunk expanded at once: K (\d+) GiB \+ V (\d+) GiB = (\d+) GiB")
    assert (mib, k, v, kv) == (65536 * 1152 / 2**20, 3, 2, P.expanded_kv_bytes(65536) / 2**30) == (72, 3, 2, 5)
    assert "Exercise 9.2: correct (1,058)" in printed()
    assert round(P.chunked_prefix_workspace(8192, 2048)["total"] / 2**20) == 1058


def test_the_decision_between_the_paths():
    V3 = flops.V3_SHAPES
    assert grab(r"at k = 2,048: 1/([\d.]+)") == 1 / flops.sparse_expand_fraction(2048, **V3) == 13.0
    dense, shared, apart = grab(r"fewer FLOPs from: dense (\d+) new tokens; top-2,048 with one shared set (\d+); "
                                r"with no overlap ([\d,]+)")
    assert (dense, shared, apart) == (P.expand_wins_from(32768), P.expand_wins_from(32768, topk=2048, distinct="fewest"),
                                      P.expand_wins_from(32768, topk=2048)) == (171, 158, 2521)
    assert grab(r"expands between ([\d,]+) and ([\d,]+) distinct tokens") == list(
        flops.distinct_selected_bounds(2048, 32768, 2048))
    exp, ab, ratio = grab(r"expanded K and V ([\d,]+) B, absorbed FP8 latent row (\d+) B -- (\d+)x")
    assert (exp, ab) == (P.bytes_per_selected_key("expand"), P.bytes_per_selected_key("absorb")) and ratio == 125
    for reads, label in (("pair", "a gather per \\(query, key\\) pair"), ("once", "each chosen token read once")):
        for distinct in ("most", "fewest"):
            r = P.prefill_roofline(2048, 32768, "H200", topk=2048, distinct=distinct, reads=reads, kv_row_bytes=656)
            e_ms, a_ms = grab(rf"^{label}\s+{distinct}\s+([\d.]+)\s+\w+\s+([\d.]+)")
            assert (e_ms, a_ms) == (round(r["expand"]["seconds"] * 1e3, 3), round(r["absorb"]["seconds"] * 1e3, 3))
    assert "Exercise 9.3: correct (147)" in printed()
    assert P.expand_wins_from(32768, topk=1024, distinct="fewest") == 147


def test_the_roofline_and_the_published_figures():
    for gpu in ("H800", "H200"):
        assert grab(rf"^{gpu}: ridge [\d.]+ FLOP/byte .* compute-bound from ([\d,]+) tokens") == \
            P.ridge_sequence_length(gpu)
    assert P.ridge_sequence_length("H200") == 825 and P.ridge_sequence_length("H800") == 1182
    gflop, ms = grab(r"8,192-token prompt, 128 heads: ([\d,.]+) GFLOP .* at least ([\d.]+) ms of compute")
    assert gflop == round(P.fa_flops(1, 128, 8192, 8192, 192, 128) / 1e9, 1)
    assert ms == round(P.fa_flops(1, 128, 8192, 8192, 192, 128) / (GPUS["H200"].bf16_tflops * 1e12) * 1e3, 3)
    assert grab(r"up to 640 TFLOPS on an H800 SXM5, (\d+)% of the") == round(100 * 640 / 989.4)  # FlashMLA's README


def test_no_speed_is_claimed():
    text = printed()
    assert text.count("on a GPU: not measured yet") == 3
    assert "TARGET = {'kind': 'expand', 'b': 1, 's_q': 8192, 's_k': 8192, 'h': 128}, ratio 0.7" in text
    assert not re.search(r"\d TFLOPS \(measured", text)


def test_the_gpu_check_budget_is_benchmarks_md():
    """The GPU check's projected budget and its prefill steps, as kernels/BENCHMARKS.md records the
    dry run (with its command); each prefill step projected within its limit."""
    bench = (ROOT / "kernels" / "BENCHMARKS.md").read_text()
    total = int(re.search(r"Projected total: \*\*(\d+) s\*\* of the 480 s budget", bench).group(1))
    rows = {name: (int(limit), float(projected)) for name, limit, projected in re.findall(
        r"^\| (prefill|prefill-bench) \| (\d+) \| [\d.]+ \| [\d.]+ \| ([\d.]+)", bench, re.M)}
    got = grab(r"projected by its dry run: (\d+) s of the 480 s budget; its prefill step (\d+) s of a (\d+) s "
               r"limit, its prefill-bench step (\d+) s of a (\d+) s limit")
    assert got == [total, round(rows["prefill"][1]), rows["prefill"][0], round(rows["prefill-bench"][1]),
                   rows["prefill-bench"][0]] and total < 480
    assert all(p <= limit for limit, p in rows.values())


@pytest.mark.skipif(not RUNS_KERNELS, reason="needs torch and triton (the kernel cells are skipped without them)")
def test_the_kernels_ran_and_passed_their_references():
    text = printed()
    for tag in ("prefill_tiled", "prefill_causal", "prefix", "sparse"):
        lines = [ln for ln in text.splitlines() if re.match(rf"^\s+(ok|FAIL)\s.* {tag}\s", ln)]
        assert len(lines) == 6 and all(ln.strip().startswith("ok") for ln in lines), (tag, lines)
    assert "version 2 against version 1:" in text
    assert "the token with no valid index: out 0, lse -inf" in text
