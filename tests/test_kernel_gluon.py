"""Version 5 (Gluon, Hopper only): what can be checked without a GPU, and the GPU tests.

Gluon has no CPU interpreter. tests/test_kernel_compile.py compiles it for sm_90 under
triton 3.9 and 3.6 and checks its loop (executed/useful MMA = 1.00, next tile in flight at
every MMA). Here: its input contract, its label, its GPU cases in emulation (the GPU-like
reference within the GPU's tolerances of float64), and -- on a Hopper GPU only -- its results
against both references at FlashMLA's tolerances."""
import math
from pathlib import Path

import pytest
import torch

from kernels.mla_decode import VERSION_TABLE, mla_decode_with_kvcache, prepare
from kernels.plan import mla_decode_plan
from tests.test_kernels import assert_emulation_passes, assert_references, make_case, references

ROOT = Path(__file__).resolve().parent.parent
LABEL = "compiled, not yet run on a GPU"


def test_gluon_is_labelled_everywhere():
    assert VERSION_TABLE["gluon"].status == LABEL
    for doc in ("kernels/README.md", "README.md", "kernels/BENCHMARKS.md"):
        text = (ROOT / doc).read_text()
        assert "gluon" in text.lower() and LABEL in text, f"{doc} must say the Gluon version is {LABEL!r}"


@pytest.mark.parametrize("change, match", [
    (dict(fp8=True), "bf16 caches only"),
    (dict(page=16), "page_block_size >= 64"),
    (dict(dtype=torch.float16), "bfloat16"),
])
def test_gluon_input_contract(change, match):
    kw = dict(page=64, fp8=False, dtype=torch.bfloat16)
    kw.update(change)
    q, cache, bt, sl = make_case([5, 70], page=kw["page"], h_q=16, fp8=kw["fp8"], dtype=kw["dtype"])
    with pytest.raises((ValueError, TypeError), match=match):
        prepare(q, cache, bt, sl, 512, is_fp8_kvcache=kw["fp8"], gpu=True, version="gluon")


def test_gluon_plan_must_have_64_rows():
    q, cache, bt, sl = make_case([5, 70], page=64, h_q=16)
    plan16 = mla_decode_plan(sl, 16, 1, num_sms=4)  # 16 rows per program: the Triton versions' choice
    with pytest.raises(ValueError, match="block_m"):
        prepare(q, cache, bt, sl, 512, gpu=True, version="gluon", plan=plan16)
    _, launches, _, _ = prepare(q, cache, bt, sl, 512, gpu=True, version="gluon",
                                plan=mla_decode_plan(sl, 16, 1, num_sms=4, block_m=64))
    assert launches[0].grid == (1, 4) and launches[0].num_warps == 8


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU path")
def test_gluon_says_it_needs_a_gpu():
    q, cache, bt, sl = make_case([5, 70], page=64, h_q=16)
    with pytest.raises(RuntimeError, match="Hopper GPU"):
        mla_decode_with_kvcache(q, cache, bt, sl, 512, version="gluon")


def _hopper():
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


GPU_CASES = [
    ([0, 1, 63, 64, 65, 700, 4097], 1, 128, False),
    ([1] * 20 + [16384], 1, 16, False),
    ([3, 130, 2048], 2, 128, True),
    ([2000] * 8, 1, 64, True),
]


@pytest.mark.parametrize("lens, s_q, h_q, causal", GPU_CASES)
def test_gluon_gpu_cases_pass_in_emulation(lens, s_q, h_q, causal):
    """What test_gluon_on_hopper will see, without a GPU: the GPU-like reference (bf16 K, V, P)
    within the GPU's tolerances of float64 on exactly its cases."""
    q, cache, bt, sl = make_case(lens, page=64, s_q=s_q, h_q=h_q, seed=len(lens))
    assert_emulation_passes(f"[gluon, lens={lens}]", *references(q, cache, bt, sl, False, causal, 192 ** -0.5, "gluon"))


@pytest.mark.gpu
@pytest.mark.parametrize("lens, s_q, h_q, causal", GPU_CASES)
def test_gluon_on_hopper(lens, s_q, h_q, causal):
    """Against both references at FlashMLA's tolerances; NaN-poisoned unused slots,
    out-of-range unused table entries (make_case). Skipped without a Hopper GPU."""
    if not _hopper():
        pytest.skip("version 'gluon' needs a Hopper (sm_90) GPU")
    q, cache, bt, sl = make_case(lens, page=64, s_q=s_q, h_q=h_q, seed=len(lens))
    out, lse = mla_decode_with_kvcache(q, cache, bt, sl, 512, softmax_scale=192 ** -0.5, causal=causal,
                                       version="gluon")
    ref64, ref_gpu = references(q, cache, bt, sl, False, causal, 192 ** -0.5, "gluon")
    assert_references(f"[gluon, lens={lens}]", out, lse, ref64, ref_gpu)
    if 0 in lens:
        assert torch.all(lse[lens.index(0)] == -math.inf)
