"""Version 5 (Gluon, Hopper only): what can be checked without a GPU.

Gluon has no CPU interpreter. tests/test_kernel_compile.py compiles it for sm_90 under
triton 3.9 and 3.6 and checks its loop (executed/useful MMA = 1.00, next tile in flight at
every MMA). Here: its input contract and its label. Its GPU cases are the GPU check's
(tests/gpu_check.py, run by tests/test_kernel_gpu_matrix.py::test_hopper): on a Hopper GPU
against both references at FlashMLA's tolerances, elsewhere in emulation (the GPU-like
reference within the GPU's tolerances of float64)."""
from pathlib import Path

import pytest
import torch

from kernels.mla_decode import VERSION_TABLE, mla_decode_with_kvcache, prepare
from kernels.plan import mla_decode_plan
from tests.test_kernels import make_case

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

