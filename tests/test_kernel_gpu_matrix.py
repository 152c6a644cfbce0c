"""The GPU check's case matrix (tests/gpu_check.py): every version, every case, against both
references -- float64 and the GPU-like one of the version (its roundings of K, V and P) --
through kernels.reference.check_against_references, the one check every kernel test makes
(tests/test_kernels.py's assert_references). What kernels/gpu_check.sh's test steps run
(pytest -m gpu_check).

On a GPU: each case at its size, compiled; the GPU-like reference within the GPU's tolerances
of float64 (FlashMLA's: out abs 8e-4 x (V rms / 0.1) or rel 2.01/128, cosine 5e-6; lse abs 1e-6
or rel 8.01/65536, cosine 1e-7 -- kernels.reference.gpu_tolerances), the kernel within them of
both references. Hopper-only versions on an sm_90 GPU only.
Without one (slow: CI and the dry run), every case of every version, in two parts:
  1. at its GPU size, in emulation: the GPU-like reference within the GPU's tolerances of
     float64 -- the first check a GPU run makes, so that a case a GPU would fail for its
     roundings fails here (the Hopper-only versions' GPU cases are checked this way only);
  2. where the version runs in Triton's interpreter: the case shrunk (gpu_check.shrunk), the
     kernel against both references (at the interpreter's tolerances; the GPU-like reference of
     the shrunk case against float64 at the GPU's).
A sparse case runs both variants (gpu_check.variants): the default top-k split and one piece.
out and lse start as NaN, so every element must be written. Inputs and references are built
once per input set and shared by the versions that run on them (their GPU-like references
once per operand type)."""
import pytest
import torch

from kernels.mla_decode import VERSION_TABLE
from tests import gpu_check as G
from tests.test_kernels import DEVICE, assert_references

ON_GPU = DEVICE == "cuda"
SLOW_HERE = pytest.mark.slow if not ON_GPU else pytest.mark.gpu_check  # the interpreter: minutes, not seconds


class InputSet:
    """One input set at a time (the cases that share it are adjacent in G.cases()): its tensors
    on DEVICE, its float64 reference, its GPU-like references by operand type."""

    def __init__(self):
        self.key = None

    def of(self, case):
        key = case.inputs_key + (case.shape,)  # a shrunk case has its own shape
        if key != self.key:
            self.key, self.refs_gpu, self.checked = None, {}, {}  # drop the last set first (a 16K cache)
            self.tensors = G.inputs(case, DEVICE)
            self.ref64 = G.reference(case, self.tensors)
            self.v_rms = G.v_rms(case, self.tensors)
            self.key = key
        ops = G.operands(case)
        if ops not in self.refs_gpu:
            self.refs_gpu[ops] = G.gpu_reference(case, self.tensors, ops)
        return self.ref64, self.refs_gpu[ops]


FULL, SHRUNK = InputSet(), InputSet()


def check_emulated(case):
    """Part 1: the case at its GPU size, the GPU-like reference of its version against float64
    at the GPU's tolerances (once per input set and operand type: the versions that round
    alike share the result)."""
    ref64, ref_gpu = FULL.of(case)
    ops = G.operands(case)
    if ops not in FULL.checked:
        tag = f"[{case.id} at its GPU size, {ops} operands]"
        try:
            assert_references(tag, None, None, ref64, ref_gpu, FULL.v_rms, sparse=bool(case.shape.topk))
            FULL.checked[ops] = None
        except AssertionError as e:
            FULL.checked[ops] = str(e)
    assert FULL.checked[ops] is None, FULL.checked[ops]


def check_kernel(case, inputs):
    """The kernel on the case (every variant) against both references of `inputs` (an InputSet)."""
    ref64, ref_gpu = inputs.of(case)
    for label, options in G.variants(case):
        launches, out, lse = G.prepare_case(case, inputs.tensors, options)
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        for launch in launches:
            launch()
        if ON_GPU:
            torch.cuda.synchronize()
        tag = f"[{case.id}{', ' + label if label else ''}{'' if ON_GPU else ', shrunk, interpreter'}]"
        assert_references(tag, out, lse, ref64, ref_gpu, inputs.v_rms, sparse=bool(case.shape.topk))
        lens = case.shape.lens
        if 0 in lens:  # an empty sequence: out 0, lse infinite (its sign is the reference's, compared above)
            i = lens.index(0)
            assert torch.all(out[i] == 0) and torch.all(torch.isinf(lse[i])), tag


def run_case(case):
    v = VERSION_TABLE[case.version]
    if ON_GPU:
        if not v.runs_on(DEVICE):
            pytest.skip(f"version {case.version!r} does not run on this GPU (its row of VERSION_TABLE)")
        check_kernel(case, FULL)
        return
    check_emulated(case)
    if v.runs_on(DEVICE):  # in the interpreter; a Hopper-only version has no more to check without its GPU
        check_kernel(G.shrunk(case), SHRUNK)


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
    include an empty sequence or a -1-only query token, and lengths on both sides of 64; the
    sparse cases run with several top-k pieces and with one."""
    ids = {(c.version, c.cache) for step in G.STEPS for c in G.cases(step)}
    assert ids == {(n, cache) for n, v in VERSION_TABLE.items() for cache in v.caches}
    for step, shapes in G.STEPS.items():
        lens = {n for s in shapes for n in s.lens}
        assert 0 in lens and (step == "sparse" or {63, 64, 65} <= lens or {1, 130} <= lens), step
    assert {s.h_q for s in G.DENSE} == {16, 128} and {s.s_q for s in G.DENSE} == {1, 2}
    assert {s.page for s in G.HOPPER} == {64, 128, 256} and {s.h_q for s in G.SPARSE} == {64, 128}
    for case in G.cases("sparse"):
        for shape_case in (case, G.shrunk(case)):  # on a GPU and in the interpreter
            pieces = [G.prepare_case(shape_case, G.inputs(shape_case, "cpu", contents=False),
                                     dict(opts, check_indices=False), gpu=shape_case is case)[0][0].grid[2]
                      for _, opts in G.variants(shape_case)]
            assert pieces[0] > 1 and pieces[1] == 1, (shape_case.id, pieces)


def test_fp8_cases_use_power_of_two_scales():
    """The matrix's FP8 caches carry FlashMLA's scales, powers of two (code * scale is exact in
    bf16): the default of kernels.fp8 and mlacourse.fp8. With max|x|/448 scales a GPU's lse
    misses FlashMLA's tolerance (tests/test_kernel_sparse.py shows it). Checked on each FP8
    shape's cache as the test builds it (shrunk: the same packing)."""
    import numpy as np
    shapes = {(c.shape, c.seed): c for c in G.cases() if c.cache == "fp8"}
    assert shapes
    for case in shapes.values():
        cache = G.inputs(G.shrunk(case), "cpu")[1]  # uint8 [..., 656]
        scales = cache.reshape(-1, cache.shape[-1])[:, 512:528].contiguous().view(torch.float32).flatten()
        scales = scales[torch.isfinite(scales)]  # unused rows are poison (NaN)
        mantissa, _ = np.frexp(scales.numpy())
        assert scales.numel() and np.all(scales.numpy() > 0) and np.all(mantissa == 0.5), case.id
