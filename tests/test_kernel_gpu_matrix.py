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
from kernels.mla_prefill import PREFILL_TABLE
from kernels.reference import check_against_references
from tests import gpu_check as G
from tests import gpu_check_prefill as P
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


class PrefillInputs:
    """The prefill cases' input set, one at a time (cases that share one are adjacent in
    P.cases()): its tensors on DEVICE, V's rms, its references by (machine, operand type)."""

    def __init__(self):
        self.key = None

    def of(self, case, machine):
        key = case.inputs_key + (case.shape,)  # a shrunk case has its own shape
        if key != self.key:
            self.key, self.refs, self.checked = None, {}, {}
            self.tensors = P.inputs(case, DEVICE)
            self.v_rms = P.v_rms(case, self.tensors)
            self.key = key
        ref_key = (machine, P.operands(case))
        if ref_key not in self.refs:
            self.refs[ref_key] = P.references(case, self.tensors, machine)
        return self.refs[ref_key]


PREFILL_FULL, PREFILL_SHRUNK = PrefillInputs(), PrefillInputs()


def check_prefill_emulated(case):
    """Part 1 for a prefill case: at its GPU size, the GPU-like reference against float64 at the
    GPU's prefill tolerances (once per input set and operand type)."""
    ref64, ref_gpu = PREFILL_FULL.of(case, "gpu")
    ops = P.operands(case)
    if ops not in PREFILL_FULL.checked:
        tag = f"[{case.id} at its GPU size, {ops} operands]"
        bad = [c.message for c in check_against_references(tag, None, None, ref64, ref_gpu, False, PREFILL_FULL.v_rms,
                                                           kind=case.shape.tol_kind) if not c.ok]
        PREFILL_FULL.checked[ops] = bad[0] if bad else None
    assert PREFILL_FULL.checked[ops] is None, PREFILL_FULL.checked[ops]


def check_prefill_kernel(case, inputs):
    """The kernel on the prefill case (every variant) against both references of `inputs` (a
    PrefillInputs) at this machine's tolerances; rows that see no key (float64 lse -inf) must hold
    exactly out 0 and lse -inf."""
    ref64, ref_gpu = inputs.of(case, "gpu" if ON_GPU else "interpreter")
    no_key = torch.isinf(ref64[1]) & (ref64[1] < 0)  # expand, prefix: [h, rows]; sparse: [tokens, h]
    for label, options in P.variants(case):
        launches, out, lse = P.prepare_case(case, inputs.tensors, options)
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        for launch in launches:
            launch()
        if ON_GPU:
            torch.cuda.synchronize()
        got = tuple(t.cpu() for t in P.in_sequences(case, out, lse))
        tag = f"[{case.id}{', ' + label if label else ''}{'' if ON_GPU else ', shrunk, interpreter'}]"
        for c in check_against_references(tag, *got, ref64, ref_gpu, ON_GPU, inputs.v_rms, kind=case.shape.tol_kind):
            assert c.ok, c.message
        rows_first = no_key if case.shape.kind == "sparse" else no_key.T  # out's leading dims: [rows, h]
        assert torch.all(got[0][rows_first] == 0) and torch.all(got[1][no_key] == float("-inf")), tag


@pytest.mark.gpu_check
@SLOW_HERE
@pytest.mark.parametrize("case", P.cases(), ids=lambda c: c.id)
def test_prefill(case):
    """The prefill kernels (PREFILL_TABLE's rows, the chunked prefix context) on their cases:
    compiled at GPU size on a GPU; without one, at GPU size in emulation and shrunk in the
    interpreter."""
    v = PREFILL_TABLE[case.version]
    if ON_GPU:
        if not v.runs_on(DEVICE):
            pytest.skip(f"version {case.version!r} does not run on this GPU (its row of PREFILL_TABLE)")
        check_prefill_kernel(case, PREFILL_FULL)
        return
    check_prefill_emulated(case)
    if v.runs_on(DEVICE):
        check_prefill_kernel(P.shrunk(case), PREFILL_SHRUNK)


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


def test_the_prefill_matrix_has_its_edges():
    """Every row of the prefill table, every cache it reads, has cases (an expand row also runs the
    chunked prefix). At GPU size and shrunk alike: fresh prompts of 0, 1 and on both sides of 64
    and 128 tokens (GPU tiles of 64 keys and 64 or 128 queries; the interpreter's 32 divides both),
    extends after a prefix, queries that see no key, a call without a causal mask; prefixes on
    both sides of a chunk boundary and several chunks, a sequence with no new tokens and one with
    no prefix; a top-k longer than the rows; the sparse cases with several top-k pieces and one."""
    from mlacourse.prefill import context_chunks, visible_keys
    ids = {(c.version, c.cache) for c in P.cases()}
    assert ids == {(n, cache) for n, v in PREFILL_TABLE.items() for cache in v.caches}
    assert {c.version for c in P.cases() if c.shape.kind == "prefix"} == {
        n for n, v in PREFILL_TABLE.items() if v.call == "expand"}
    for sized in (lambda c: c, P.shrunk):
        found = [sized(c) for c in P.cases()]
        expand = [c.shape for c in found if c.shape.kind == "expand"]
        fresh = {n for s in expand for n, k in zip(s.n_q, s.n_k) if n == k}
        assert {0, 1, 63, 64, 65, 127, 128, 129} <= fresh and max(fresh) > 129
        pairs = [(n, k, s.causal) for s in expand for n, k in zip(s.n_q, s.n_k)]
        assert any(0 < n < k for n, k, _ in pairs) and not all(causal for *_, causal in pairs)
        assert any(causal and (visible_keys(n, k, True) == 0).any() for n, k, causal in pairs if n)
        for s in (c.shape for c in found if c.shape.kind == "prefix"):
            assert context_chunks(len(s.n_q), max(s.n_k), s.chunk_tokens, s.page)[0] == s.chunk  # tokens a chunk
            prefixes = [p for n, p in zip(s.n_q, s.n_k) if n]
            assert {s.chunk - 1, 0, 1} <= {p % s.chunk for p in prefixes if p} and max(prefixes) > 2 * s.chunk
            assert 0 in s.n_q and 0 in prefixes
        sparse = [c for c in found if c.shape.kind == "sparse"]
        assert any(c.shape.topk > c.shape.n_k[0] for c in sparse)
        for case in sparse:
            pieces = [P.prepare_case(case, P.inputs(case, "cpu", contents=False), opts, gpu=sized is not P.shrunk
                                     )[0][0].grid[2] for _, opts in P.variants(case)]
            assert pieces[0] > 1 and pieces[1] == 1, (case.id, pieces)
    assert {s.h for s in P.SHAPES} >= {32, 128}


def test_fp8_cases_use_power_of_two_scales():
    """The matrix's FP8 caches (the sparse prefill's rows too) carry FlashMLA's scales, powers of two (code * scale is exact in
    bf16): the default of kernels.fp8 and mlacourse.fp8. With max|x|/448 scales a GPU's lse
    misses FlashMLA's tolerance (tests/test_kernel_sparse.py shows it). Checked on each FP8
    shape's cache as the test builds it (shrunk: the same packing)."""
    import numpy as np
    shapes = {(c.shape, c.seed): c for c in G.cases() + P.cases() if c.cache == "fp8"}
    assert any(isinstance(c, P.PrefillCase) for c in shapes.values())
    for case in shapes.values():
        shrunk = P.shrunk(case) if isinstance(case, P.PrefillCase) else G.shrunk(case)
        cache = (P.inputs if isinstance(case, P.PrefillCase) else G.inputs)(shrunk, "cpu")[1]  # uint8 [..., 656]
        scales = cache.reshape(-1, cache.shape[-1])[:, 512:528].contiguous().view(torch.float32).flatten()
        scales = scales[torch.isfinite(scales)]  # unused rows are poison (NaN)
        mantissa, _ = np.frexp(scales.numpy())
        assert scales.numel() and np.all(scales.numpy() > 0) and np.all(mantissa == 0.5), case.id
