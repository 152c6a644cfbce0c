"""The absorbed sparse prefill (kernels/sparse_prefill.py: FlashMLA's flash_mla_sparse_fwd call on
chapter 8's sparse decode kernel) against float64 (mlacourse.prefill.sparse_prefill) and the
GPU-like reference (CPU: Triton's interpreter; compiled on a GPU), at FlashMLA's sparse prefill
tolerances (kernels.reference, kind "sparse_prefill").

The GPU check's prefill matrix (tests/gpu_check_prefill.py, run by tests/test_kernel_gpu_matrix.py::
test_prefill) holds FlashMLA's sparse prefill cases: rows in bf16 and FP8, every row no index names
poisoned (NaN, or 0xFF bytes for FP8), -1, other negatives and indices >= s_kv (FlashMLA's "no
key"), a query whose every index is invalid, duplicates, a top-k longer than the rows, 128 and 64
heads, the default top-k split and one piece. This file holds the call's own: top-k lists shorter
than a tile and an explicit split, that it is the sparse decode kernel bit for bit, bitwise
batch invariance, a prompt past 65,535 tokens cut into launches, the input checks."""

import numpy as np
import pytest
import torch

from kernels import sparse_decode
from kernels import sparse_prefill as sp
from kernels.mla_prefill import PREFILL_TABLE
from kernels.reference import check_against_references, reference_sparse_prefill, value_rms
from mlacourse import sparse as S
from tests.test_kernels import DEVICE

ROW = PREFILL_TABLE["prefill_sparse"]


def make_case(s_q, s_kv, h_q, topk, fp8=False, seed=0, invalid=0.2):
    """q [s_q, h_q, 576] bf16; kv [s_kv, 1, 576] bf16 (or uint8 [s_kv, 1, 656]) whose rows no index
    names are poison; indices [s_q, 1, topk] int32: random rows, a fraction `invalid` replaced by -1,
    -7 or s_kv + something, one duplicate per query, and query 0 with no valid index at all."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, s_kv, size=(s_q, 1, topk))
    idx[:, 0, -1] = idx[:, 0, 0]  # a duplicate: counted twice
    bad = rng.random((s_q, 1, topk)) < invalid
    idx[bad] = rng.choice([-1, -7, s_kv, s_kv + 1000], size=int(bad.sum()))
    if s_q > 1:
        idx[0] = -1  # a query without a key
    named = np.unique(idx[(idx >= 0) & (idx < s_kv)])
    if fp8:
        kv = S.random_fp8_cache(rng, 1, s_kv, named, magnitude=(0.3, 3.0))[0]  # [s_kv, 1, 656], others 0xFF
        kv_t = torch.from_numpy(kv)
    else:
        rows = np.full((s_kv, 1, 576), np.nan)
        rows[named] = rng.standard_normal((named.size, 1, 576))
        kv_t = torch.from_numpy(rows).to(torch.bfloat16)
    q = torch.from_numpy(rng.standard_normal((s_q, h_q, 576))).to(torch.bfloat16)
    return q.to(DEVICE), kv_t.to(DEVICE), torch.from_numpy(idx).to(torch.int32).to(DEVICE)


def v_rms_of(kv, idx):
    if kv.dtype == torch.uint8:
        from mlacourse.fp8 import unpack_fp8_row
        rows = torch.from_numpy(unpack_fp8_row(kv.cpu().numpy()[:, 0]))
    else:
        rows = kv.cpu().double()[:, 0]
    i = idx.cpu().long()
    named = torch.unique(i[(i >= 0) & (i < kv.shape[0])])
    return value_rms(rows[named, :512]) if named.numel() else 1.0


def check(q, kv, idx, sm_scale=None, **options):
    found, out, lse = sp.prepare(q, kv, idx, sm_scale, **options)
    out.fill_(float("nan"))
    lse.fill_(float("nan"))
    for launch in found:
        launch()
    args = (q.cpu(), kv.cpu(), idx.cpu(), sm_scale)
    ref64 = reference_sparse_prefill(*args)
    ref_gpu = reference_sparse_prefill(*args, mode="gpu", operands=ROW.gpu_operands(q.dtype))
    tag = f"[s_q={q.shape[0]}, h_q={q.shape[1]}, topk={idx.shape[2]}, {'fp8' if kv.dtype == torch.uint8 else 'bf16'}, " \
          f"{options}]"
    for c in check_against_references(tag, out, lse, ref64, ref_gpu, DEVICE == "cuda", v_rms_of(kv, idx),
                                      kind="sparse_prefill"):
        assert c.ok, c.message
    return found, out, lse


def test_short_lists_and_a_split_over_the_list():
    check(*make_case(3, 50, 16, 20, seed=2))  # top-k 20: shorter than one tile
    found, _, _ = check(*make_case(2, 300, 16, 150, seed=3), num_splits=3)
    assert found[0].grid[2] == 3 and found[-1].label == "combine"


def test_it_is_the_sparse_decode_kernel():
    """The same FP8 rows and lists through sparse decode (each query token a sequence of one token, one
    page of s_kv rows) give the same bits: the prefill adds no kernel of its own."""
    q, kv, idx = make_case(5, 64, 16, 32, fp8=True, seed=4, invalid=0.0)
    idx = idx.clamp_max(63)  # decode's rule: only -1 is "no key"
    out, lse = sp.sparse_mla_prefill(q, kv, idx, 0.1)
    d_out, d_lse = sparse_decode.sparse_mla_decode_with_kvcache(q[:, None], kv[None], idx, 512, 0.1)
    assert torch.equal(out, d_out[:, 0]) and torch.equal(lse, d_lse[:, :, 0])


def test_a_token_is_bitwise_the_same_in_any_prompt():
    q, kv, idx = make_case(6, 80, 16, 48, seed=5)
    out, lse = sp.sparse_mla_prefill(q, kv, idx, batch_invariant=True)
    alone = sp.sparse_mla_prefill(q[3:4], kv, idx[3:4], batch_invariant=True)
    assert torch.equal(out[3:4], alone[0]) and torch.equal(lse[3:4], alone[1])


def test_a_long_prompt_is_cut_into_launches():
    """FlashMLA's test runs s_q = 70,000 ("we cannot put it on the second dimension of grid shape");
    here the launches are built (gpu=True: nothing runs) and cover the tokens in order."""
    s_q = 70_000
    q = torch.zeros(s_q, 1, 576, dtype=torch.bfloat16)
    kv = torch.zeros(8, 1, 576, dtype=torch.bfloat16)
    idx = torch.zeros(s_q, 1, 16, dtype=torch.int32)
    found, out, lse = sp.prepare(q, kv, idx, gpu=True)
    assert [lc.grid[1] for lc in found] == [sparse_decode.MAX_GRID_Y, s_q - sparse_decode.MAX_GRID_Y]
    assert found[1].args["q_ptr"].data_ptr() == q[sparse_decode.MAX_GRID_Y:].data_ptr()
    assert found[1].args["lse_ptr"].data_ptr() == lse[sparse_decode.MAX_GRID_Y:].data_ptr()
    assert out.shape == (s_q, 1, 512) and lse.shape == (s_q, 1)


def test_the_input_checks():
    q, kv, idx = make_case(2, 30, 16, 16, seed=7)
    with pytest.raises(ValueError, match=r"q must be \[s_q, h_q, 576\]"):
        sp.sparse_mla_prefill(q[..., :512], kv, idx)
    with pytest.raises(TypeError, match=r"kv must be \[s_kv, 1, 576\] in q's dtype"):
        sp.sparse_mla_prefill(q, kv.half(), idx)
    with pytest.raises(TypeError, match=r"indices must be int32 \[s_q=2, 1, topk >= 1\]"):
        sp.sparse_mla_prefill(q, kv, idx.long())
    with pytest.raises(ValueError, match="d_v must be 512"):
        sp.sparse_mla_prefill(q, kv, idx, d_v=128)
    with pytest.raises(TypeError, match="unknown option"):
        sp.sparse_mla_prefill(q, kv, idx, causal=True)
    with pytest.raises(ValueError, match="batch_invariant=True reads each top-k list in one program"):
        sp.sparse_mla_prefill(q, kv, idx, batch_invariant=True, num_splits=2)
