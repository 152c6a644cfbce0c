"""The GPU check's case matrix (tests/gpu_check.py), every version against the float64
reference -- what kernels/gpu_check.sh's test steps run (pytest -m gpu_check).

On a GPU: each case at its size, compiled, at FlashMLA's tolerances (out: 8e-4 abs + 2.01/128
rel, cosine difference < 1e-5; lse: 1e-6 abs + 8.01/65536 rel), Hopper-only versions on an sm_90
GPU only. Without one (slow: the dry run and CI): each case shrunk to interpreter size, at the
interpreter's tolerances (tests/test_kernels.py), the Gluon versions skipped (no interpreter).
Inputs and references are built once per input set and shared by the versions that run on them."""
import pytest
import torch

from kernels.mla_decode import VERSION_TABLE, mla_decode_with_kvcache
from kernels.reference import compare
from tests import gpu_check as G
from tests.test_kernels import DEVICE, GPU_LSE_TOL, GPU_OUT_TOL, LSE_TOL, MAX_COS_DIFF, OUT_TOL

ON_GPU = DEVICE == "cuda"
SLOW_HERE = pytest.mark.slow if not ON_GPU else pytest.mark.gpu_check  # the interpreter: minutes, not seconds
_INPUTS: dict = {}  # inputs_key -> (tensors on DEVICE, float64 reference)


def _prepared(case):
    if case.inputs_key not in _INPUTS:
        _INPUTS.clear()  # cases of one input set are adjacent: keep one set (a 16K sequence's cache) alive
        tensors = G.inputs(case, DEVICE)
        _INPUTS[case.inputs_key] = (tensors, G.reference(case, tensors))
    return _INPUTS[case.inputs_key]


def run_case(case):
    v = VERSION_TABLE[case.version]
    if not v.runs_on(DEVICE):
        pytest.skip(f"version {case.version!r} does not run on {DEVICE} here (its row of VERSION_TABLE)")
    if not ON_GPU:
        case = G.shrunk(case)
    tensors, (ref_out, ref_lse) = _prepared(case)
    if case.shape.topk:
        from kernels import sparse_decode
        launches, out, lse = sparse_decode.prepare(*tensors, softmax_scale=G.SCALE)
        out.fill_(float("nan"))  # every element must be written
        lse.fill_(float("nan"))
        for launch in launches:
            launch()
    else:
        out, lse = mla_decode_with_kvcache(*tensors, 512, **G.call_options(case))
    if ON_GPU:
        torch.cuda.synchronize()
    out_tol, lse_tol, cos = (GPU_OUT_TOL, GPU_LSE_TOL, 1e-5) if ON_GPU else (OUT_TOL, LSE_TOL, MAX_COS_DIFF)
    c = compare(f"out [{case.id}]", out, ref_out, **out_tol)
    assert c.ok and c.cos_diff < cos, c.message
    c = compare(f"lse [{case.id}]", lse, ref_lse, **lse_tol)
    assert c.ok, c.message
    lens = case.shape.lens
    if 0 in lens:  # an empty sequence: out 0, lse infinite (its sign is the reference's, compared above)
        i = lens.index(0)
        assert torch.all(out[i] == 0) and torch.all(torch.isinf(lse[i])), case.id


@pytest.mark.gpu_check
@SLOW_HERE
@pytest.mark.parametrize("case", G.cases("dense"), ids=lambda c: c.id)
def test_dense(case):
    run_case(case)


@pytest.mark.gpu_check
@SLOW_HERE
@pytest.mark.parametrize("case", G.cases("hopper"), ids=lambda c: c.id)
def test_hopper(case):
    run_case(case)


@pytest.mark.gpu_check
@SLOW_HERE
@pytest.mark.parametrize("case", G.cases("sparse"), ids=lambda c: c.id)
def test_sparse(case):
    run_case(case)


def test_the_matrix_covers_every_version_and_cache():
    """Every row of the version table, every cache it reads, has cases; each step's shapes
    include an empty sequence or a -1-only query token, and lengths on both sides of 64."""
    ids = {(c.version, c.cache) for step in G.STEPS for c in G.cases(step)}
    assert ids == {(n, cache) for n, v in VERSION_TABLE.items() for cache in v.caches}
    for step, shapes in G.STEPS.items():
        lens = {n for s in shapes for n in s.lens}
        assert 0 in lens and (step == "sparse" or {63, 64, 65} <= lens or {1, 130} <= lens), step
    assert {s.h_q for s in G.DENSE} == {16, 128} and {s.s_q for s in G.DENSE} == {1, 2}
    assert {s.page for s in G.HOPPER} == {64, 128, 256} and {s.h_q for s in G.SPARSE} == {64, 128}
