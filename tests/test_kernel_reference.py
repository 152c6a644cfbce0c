"""kernels.reference's two modes: the float64 reference and the GPU-like one (the kernels'
roundings emulated on the CPU), and the tolerances a GPU run is held to.

The GPU-like mode is checked against a hand computation that rounds with mlacourse.fp8's
numpy bf16 (not torch's conversions), its batched form against its per-sequence form, its
sparse form against its dense form, and it is shown to move results by bf16's rounding --
not zero (a check that cannot fail) and not more."""
import math

import numpy as np
import pytest
import torch

from kernels import fp8 as kfp8
from kernels.reference import (FLASHMLA_LSE_TOL, FLASHMLA_OUT_TOL, FLASHMLA_SPARSE_OUT_TOL, compare, gpu_rows,
                               gpu_tolerances, reference_decode, reference_decode_padded, reference_sparse_decode)
from mlacourse import fp8 as npfp8
from mlacourse import sparse as S
from tests.test_kernels import make_case


def _bf16(x):
    """Round to bf16 with the numpy implementation (through float32, as a GPU's fp32 values are)."""
    return npfp8.bf16_decode(npfp8.bf16_encode(np.asarray(x, dtype=np.float64).astype(np.float32))).astype(np.float64)


def test_gpu_mode_rounds_where_the_kernels_round():
    """One sequence of 5 keys, 3 heads, bf16 rows, worked by hand in numpy: S exact then
    float32, P = exp(S - max) rounded to bf16 before P V, l from the unrounded P, out to bf16."""
    q, cache, bt, sl = make_case([5], page=16, h_q=3, seed=3)
    scale = 192 ** -0.5
    out, lse = reference_decode(q, cache, bt, sl, softmax_scale=scale, mode="gpu")
    assert out.dtype == torch.bfloat16 and lse.dtype == torch.float32
    kv = cache[bt[0, 0], :5, 0].double().numpy()  # [5, 576] bf16 values
    qq = q[0, 0].double().numpy()  # [3, 576]
    s = (qq @ kv.T).astype(np.float32).astype(np.float64) * scale  # [3, 5]
    p = np.exp(s - s.max(axis=1, keepdims=True))
    o = _bf16(_bf16(p) @ kv[:, :512] / p.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(out[0, 0].double().numpy(), o)
    np.testing.assert_allclose(lse[0, :, 0].double().numpy(), s.max(1) + np.log(p.sum(1)), rtol=1e-7)


@pytest.mark.parametrize("scales", ["pow2", "amax"])
def test_fp8_rows_are_dequantized_as_the_kernels_do(scales):
    """FP8 rows: code * scale in float32, then bf16 (tiles._load_kv_tile). With power-of-two scales
    that is the exact value; with max|x|/448 scales most values move."""
    rng = np.random.default_rng(1)
    rows = npfp8.pack_fp8_row(rng.standard_normal((8, 512)) * 2, rng.standard_normal((8, 64)), scales)
    exact = torch.from_numpy(npfp8.unpack_fp8_row(rows))  # [8, 576] float64
    got = gpu_rows(exact, torch.bfloat16, True)
    by_hand = _bf16(exact.numpy().astype(np.float32))
    np.testing.assert_array_equal(got.numpy(), by_hand)
    moved = float((got != exact).double().mean())
    assert moved == 0.0 if scales == "pow2" else moved > 0.5, (scales, moved)
    assert torch.equal(gpu_rows(exact, torch.float32, True), exact.to(torch.float32).double())


def test_the_emulation_moves_results_by_bf16_rounding():
    """Not a check that cannot fail: the GPU-like out differs from float64 by bf16's steps (P
    rounded at 2^-9 relative, out stored at 2^-9), the lse by far less (only the fp32 scores)."""
    q, cache, bt, sl = make_case([40, 300], page=32, s_q=2, h_q=16, seed=4)
    o64, l64 = reference_decode(q, cache, bt, sl, causal=True)
    og, lg = reference_decode(q, cache, bt, sl, causal=True, mode="gpu")
    err = (og.double() - o64).abs().max().item()  # in units of V (make_case: rms 1)
    assert 2.0 ** -14 < err < 2.0 ** -7, err
    rel = ((og.double() - o64).abs() / o64.abs()).median().item()
    assert 2.0 ** -12 < rel < 2.0 ** -7, rel  # the typical element: a few bf16 roundings of 2^-9
    assert (lg.double() - l64).abs().max().item() < 1e-5
    # operands float32 (version 1's vector FMAs): only the store to bf16 remains
    o32, _ = reference_decode(q, cache, bt, sl, causal=True, mode="gpu", operands=torch.float32)
    assert ((o32.double() - o64).abs() <= o64.abs() * 2.0 ** -8 + 1e-12).all()


@pytest.mark.parametrize("fp8, dtype", [(False, torch.bfloat16), (True, torch.bfloat16), (False, torch.float16)])
def test_batched_gpu_mode_equals_the_per_sequence_one(fp8, dtype):
    q, cache, bt, sl = make_case([3, 40, 64], page=16, s_q=2, h_q=4, fp8=fp8, dtype=dtype, seed=9)
    bt = torch.where(bt == 2**31 - 1, torch.zeros_like(bt), bt)  # the padded gather needs in-range ids
    cache = cache if fp8 else torch.nan_to_num(cache)  # ...and finite padding (FP8: NaN rows are masked)
    o1, l1 = reference_decode(q, cache, bt, sl, causal=True, is_fp8_kvcache=fp8, mode="gpu")
    o2, l2 = reference_decode_padded(q, cache, bt, sl, causal=True, is_fp8_kvcache=fp8, dtype=torch.float64,
                                     exact=True, mode="gpu")
    assert o2.dtype == dtype and l2.dtype == torch.float32
    c = compare("padded gpu out", o2, o1, atol=0, rtol=2.0 ** -7)  # the same roundings; at most one final step apart
    assert c.ok, c.message
    assert compare("padded gpu lse", l2, l1, atol=1e-6, rtol=1e-6).ok


def test_sparse_gpu_mode_equals_the_dense_one_over_every_token():
    rng = np.random.default_rng(2)
    kv = torch.from_numpy(rng.standard_normal((4, 16, 1, 576)))
    cache = kfp8.pack_fp8_kvcache(kv, "amax")  # amax: the K rounding is really there
    table = torch.tensor([[2, 0, 3]], dtype=torch.int32)
    q = torch.from_numpy(rng.standard_normal((1, 1, 4, 576))).to(torch.bfloat16)
    n = 40
    idx = torch.from_numpy(S.physical_indices(np.arange(n)[None, None], table.numpy(), 16)).to(torch.int32)
    so, sl_ = reference_sparse_decode(q, cache, idx, mode="gpu")
    do, dl = reference_decode(q, cache, table, torch.tensor([n], dtype=torch.int32), is_fp8_kvcache=True, mode="gpu")
    assert torch.equal(so, do) and compare("lse", sl_, dl, atol=1e-6, rtol=1e-6).ok


def test_a_token_with_no_index_and_a_row_with_no_key():
    q, cache, bt, sl = make_case([0, 3], page=16, s_q=2, h_q=2, seed=5)
    out, lse = reference_decode(q, cache, bt, sl, causal=True, mode="gpu")
    assert (out[0] == 0).all() and (lse[0] == -math.inf).all() and (lse[1, :, 1] > -math.inf).all()
    rng = np.random.default_rng(6)
    cache8 = S.random_fp8_cache(rng, 2, 8, [1, 2])
    idx = torch.tensor([[[1, -1, 2], [-1, -1, -1]]], dtype=torch.int32)
    qs = torch.from_numpy(rng.standard_normal((1, 2, 3, 576))).to(torch.bfloat16)
    for mode in ("float64", "gpu"):
        o, l_ = reference_sparse_decode(qs, torch.from_numpy(cache8), idx, mode=mode)
        assert (o[0, 1] == 0).all() and (l_[0, :, 1] == -math.inf).all() and torch.isfinite(l_[0, :, 0]).all()


def test_gpu_tolerances_are_flashmlas_at_flashmlas_scale():
    out, lse = gpu_tolerances(0.1)
    assert out == FLASHMLA_OUT_TOL and lse == FLASHMLA_LSE_TOL
    assert gpu_tolerances(0.1, sparse=True)[0] == FLASHMLA_SPARSE_OUT_TOL
    assert FLASHMLA_OUT_TOL["atol"] == 8e-4 and FLASHMLA_SPARSE_OUT_TOL["atol"] == 1e-3
    assert FLASHMLA_OUT_TOL["rtol"] == 2.01 / 128 and FLASHMLA_LSE_TOL["rtol"] == 8.01 / 65536
    assert gpu_tolerances(1.0)[0]["atol"] == pytest.approx(8e-3) and gpu_tolerances(1.0)[0]["rule"] == "either"
    with pytest.raises(ValueError, match="v_rms"):
        gpu_tolerances(0.0)


@pytest.mark.parametrize("kw, match", [
    (dict(mode="bf16"), "mode must be one of"),
    (dict(operands=torch.bfloat16), "operands= applies to mode='gpu' only"),
    (dict(mode="gpu", operands=torch.float64), "operands must be"),
])
def test_mode_errors(kw, match):
    q, cache, bt, sl = make_case([3], page=16, h_q=2)
    with pytest.raises(ValueError, match=match):
        reference_decode(q, cache, bt, sl, **kw)


def test_padded_gpu_mode_wants_float64():
    q, cache, bt, sl = make_case([3], page=16, h_q=2)
    with pytest.raises(ValueError, match="exact=True, dtype=torch.float64"):
        reference_decode_padded(q, cache, bt, sl, mode="gpu")


# (an id "gpu" would make conftest take it for a GPU test)
@pytest.mark.parametrize("mode", ["float64", "gpu"], ids=["float64", "gpu-like"])
def test_batched_sparse_reference_equals_the_per_token_one(mode):
    from kernels.reference import reference_sparse_decode_batched
    from tests.test_kernel_sparse import served_case
    q, cache, idx = served_case([0, 30, 90], s_q=2, h_q=4, topk=40, page=16, seed=12, scales="amax")
    idx[1, 1, 5:9] = -1
    c, i = torch.from_numpy(cache), torch.from_numpy(idx).to(torch.int32)
    o1, l1 = reference_sparse_decode(q, c, i, 0.1, mode=mode)
    o2, l2 = reference_sparse_decode_batched(q, c, i, 0.1, mode=mode, max_bytes=40 * 8 * 600 * 2)  # chunks of 2
    assert o2.dtype == o1.dtype and l2.dtype == l1.dtype
    tol = dict(atol=1e-12, rtol=1e-12) if mode == "float64" else dict(atol=0, rtol=2.0 ** -7)
    assert compare("out", o2, o1, **tol).ok and compare("lse", l2, l1, atol=1e-6, rtol=1e-6).ok
    assert (l2[0] == -math.inf).all() and (o2[0] == 0).all()


def _flashmla_like_case(lens, s_q, h_q, seed, page=64):
    """FlashMLA's dense decode test data (tests/test_flash_mla_dense_decoding.py generate_test_data):
    q and the cache randn / 10 clamped to [-1, 1] (V rms 0.1), bf16, NaN in unused slots."""
    from mlacourse.paged import make_paged_cache
    rng = np.random.default_rng(seed)
    seqs = [np.clip(rng.standard_normal((n, 1, 576)) / 10, -1, 1) for n in lens]
    kv, bt, sl = make_paged_cache(seqs, page, rng)
    q = np.clip(rng.standard_normal((len(lens), s_q, h_q, 576)) / 10, -1, 1)
    return (torch.from_numpy(q).to(torch.bfloat16), torch.from_numpy(kv).to(torch.bfloat16),
            torch.from_numpy(bt).to(torch.int32), torch.from_numpy(sl))


def test_flashmlas_own_cases_pass_its_tolerances_in_emulation():
    """The emulation is not harsher than a GPU: on FlashMLA's own data (V rms 0.1, softmax scale
    576^-1/2, causal, 128 heads, lengths from its correctness cases) the GPU-like reference is
    within FlashMLA's unscaled tolerances of float64, as FlashMLA's kernel is in its test."""
    q, cache, bt, sl = _flashmla_like_case([20, 140, 4096], s_q=2, h_q=128, seed=1)
    o64, l64 = reference_decode(q, cache, bt, sl, causal=True)
    og, lg = reference_decode(q, cache, bt, sl, causal=True, mode="gpu")
    for what, got, ref, tol in (("out", og, o64, FLASHMLA_OUT_TOL), ("lse", lg, l64, FLASHMLA_LSE_TOL)):
        c = compare(f"GPU-like {what}, FlashMLA's data", got, ref, **tol)
        assert c.ok, c.message


def test_our_cases_need_the_abs_tolerance_in_units_of_v():
    """Our cases draw V with rms 1, ten times FlashMLA's: the same bf16 roundings of P give ten
    times the absolute error, and outputs near 0 (where only the abs rule can pass) miss
    FlashMLA's 8e-4 -- they pass it scaled to rms 1 (gpu_tolerances(1.0): 8e-3)."""
    q, cache, bt, sl = make_case([1, 3, 70], page=16, s_q=2, h_q=8, seed=2)
    o64, _ = reference_decode(q, cache, bt, sl, causal=True)
    og, _ = reference_decode(q, cache, bt, sl, causal=True, mode="gpu")
    raw = compare("GPU-like out, FlashMLA's atol as is", og, o64, **FLASHMLA_OUT_TOL)
    assert not raw.ok and raw.cos_diff <= FLASHMLA_OUT_TOL["max_cos_diff"], raw.message  # only the abs figure
    scaled = compare("GPU-like out, atol in units of V", og, o64, **gpu_tolerances(1.0)[0])
    assert scaled.ok, scaled.message



def test_in_the_interpreter_the_kernel_may_differ_from_the_gpu_like_reference_by_both_atols():
    """The interpreter's kernel rounds no P, so it sits near float64; the GPU-like reference may sit
    up to the GPU's out tolerance away from float64 (check 1). Against each other, check 3 allows
    the interpreter's atol plus the GPU's (the triangle inequality), and no more. The figures are
    the GPU check's sparse prefill on FP8 rows (V rms 1.4): an out of -0.0411 that the GPU's
    roundings move by 6e-3, which the interpreter's atol alone refused."""
    from kernels.reference import INTERPRETER_OUT_TOL, check_against_references
    kernel = (torch.tensor([[-0.0411, 1.0]], dtype=torch.float64), torch.tensor([[2.0]], dtype=torch.float32))
    ref64 = (kernel[0].clone(), kernel[1].double())
    both = INTERPRETER_OUT_TOL["atol"] + gpu_tolerances(1.4, kind="sparse_prefill")[0]["atol"]  # 5e-3 + 8e-4 x 14
    for moved, ok in ((0.006, True), (both + 0.01, False)):
        ref_gpu = (ref64[0] + torch.tensor([[moved, 0.0]], dtype=torch.float64), kernel[1].clone())
        checks = {c.name: c for c in check_against_references("[t]", *kernel, ref64, ref_gpu, False, 1.4,
                                                                kind="sparse_prefill")}
        assert checks["out (interpreter) vs float64 [t]"].ok
        assert checks["out (interpreter) vs GPU-like reference [t]"].ok == ok, (moved, ok)
    alone = compare("the interpreter's atol alone", kernel[0], kernel[0] + 0.006, **INTERPRETER_OUT_TOL)
    assert not alone.ok
