"""The expand path's prefill kernels (kernels/mla_prefill.py, the rows of PREFILL_TABLE with
call="expand") against their two references (CPU: Triton's interpreter; compiled on a GPU).

The GPU check's prefill matrix (tests/gpu_check_prefill.py, run by tests/test_kernel_gpu_matrix.py::
test_prefill) holds the kernels' cases in FlashMLA's and FlashAttention's style -- ragged batches
with lengths 0, 1, on both sides of a tile and long, extends after a cached prefix, queries that
see no key, not causal, NaN-poisoned rows after the sequences' keys (seqused_k) and after the last
query, 128 heads -- at their GPU size in emulation and shrunk in Triton's interpreter (its tiles
are 32 x 32, kernels.mla_prefill._tiles). This file holds what is the call's own: fp16 and another
softmax scale, a float32 out buffer, bitwise batch invariance, the input checks, an empty call.
Every kernel result is checked three ways (kernels.reference.check_against_references, kind
"prefill": FlashMLA's dense prefill tolerances): the GPU-like reference against float64 at the
tolerances a GPU run is held to, and the kernel against both."""

import numpy as np
import pytest
import torch

from kernels import mla_prefill as mp
from kernels.reference import check_against_references, compare, gpu_tolerances, reference_prefill
from tests.test_kernels import DEVICE

EXPAND = {n: v for n, v in mp.PREFILL_TABLE.items() if v.call == "expand"}
VERSIONS = tuple(n for n, v in EXPAND.items() if v.runs_on(DEVICE))
V_RMS = 1.0  # q, k, v drawn from N(0, 1)


def make_case(n_q, n_k, h=2, dtype=torch.bfloat16, seed=0, gap=0, q_tail=0):
    """A ragged batch: sequence i has n_q[i] queries and n_k[i] keys. gap > 0 leaves `gap` NaN rows
    after each sequence's keys (they are then named by seqused_k, not by cu_seqlens_k); q_tail NaN
    query rows follow the last sequence. Returns q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k
    (None without a gap), on DEVICE."""
    rng = np.random.default_rng(seed)
    room = [n + gap for n in n_k]
    cu_q = np.concatenate([[0], np.cumsum(n_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(room)]).astype(np.int32)
    q = np.full((cu_q[-1] + q_tail, h, mp.D_QK), np.nan)
    q[:cu_q[-1]] = rng.standard_normal((cu_q[-1], h, mp.D_QK))
    k = np.full((cu_k[-1], h, mp.D_QK), np.nan)
    v = np.full((cu_k[-1], h, mp.D_V), np.nan)
    for i, n in enumerate(n_k):
        k[cu_k[i]:cu_k[i] + n] = rng.standard_normal((n, h, mp.D_QK))
        v[cu_k[i]:cu_k[i] + n] = rng.standard_normal((n, h, mp.D_V))
    used = torch.tensor(n_k, dtype=torch.int32) if gap else None
    ts = [torch.from_numpy(x).to(dtype) for x in (q, k, v)] + [torch.from_numpy(cu_q), torch.from_numpy(cu_k)]
    return tuple(t.to(DEVICE) for t in ts) + ((used.to(DEVICE) if used is not None else None),)


def references(q, k, v, cu_q, cu_k, used, causal, version, softmax_scale=None):
    args = (q.cpu(), k.cpu(), v.cpu(), cu_q.cpu(), cu_k.cpu(), softmax_scale, causal,
            None if used is None else used.cpu())
    ops = mp.PREFILL_TABLE[version].gpu_operands(q.dtype)
    return reference_prefill(*args), reference_prefill(*args, mode="gpu", operands=ops)


def in_sequences(t, cu_q, axis):
    """The rows of out (axis 0) or lse (axis 1) that belong to a sequence."""
    n = int(cu_q[-1])
    return t[:n] if axis == 0 else t[:, :n]


def check(q, k, v, cu_q, cu_k, used, causal=True, version="prefill_causal", softmax_scale=None, **options):
    max_q = int((cu_q[1:] - cu_q[:-1]).max()) if cu_q.numel() > 1 else 0
    out = torch.full((q.shape[0], q.shape[1], mp.D_V), float("nan"), dtype=q.dtype, device=q.device)
    lse = torch.full((q.shape[1], q.shape[0]), float("nan"), dtype=torch.float32, device=q.device)
    got_o, got_l = mp.mla_prefill(q, k, v, cu_q, cu_k, max_q, softmax_scale, causal, used, out=out, lse=lse,
                                  version=version, **options)
    assert got_o is out and got_l is lse
    ref64, ref_gpu = references(q, k, v, cu_q, cu_k, used, causal, version, softmax_scale)
    got = (in_sequences(out, cu_q, 0), in_sequences(lse, cu_q, 1))
    ref64 = (in_sequences(ref64[0], cu_q, 0), in_sequences(ref64[1], cu_q, 1))
    ref_gpu = (in_sequences(ref_gpu[0], cu_q, 0), in_sequences(ref_gpu[1], cu_q, 1))
    tag = f"[{version}, n_q={(cu_q[1:] - cu_q[:-1]).tolist()}, causal={causal}, {q.dtype}, h={q.shape[1]}]"
    for c in check_against_references(tag, *got, ref64, ref_gpu, DEVICE == "cuda", V_RMS, kind="prefill"):
        assert c.ok, c.message
    return got


@pytest.mark.parametrize("version", VERSIONS)
def test_fp16_and_another_scale(version):
    check(*make_case([9, 33], [20, 40], dtype=torch.float16, seed=6), version=version, softmax_scale=0.05)


def test_a_float32_out_buffer():
    """The chunked prefix context writes its partial results in float32."""
    q, k, v, cu_q, cu_k, used = make_case([5, 12], [9, 30], seed=7)
    out = torch.full((q.shape[0], q.shape[1], mp.D_V), float("nan"), dtype=torch.float32, device=DEVICE)
    got, lse = mp.mla_prefill(q, k, v, cu_q, cu_k, 12, out=out)
    ref = reference_prefill(q.cpu(), k.cpu(), v.cpu(), cu_q.cpu(), cu_k.cpu())
    assert got is out and got.dtype == torch.float32 and torch.isfinite(got).all()
    if DEVICE == "cpu":  # the interpreter rounds nothing, and a float32 store keeps every bit of it
        np.testing.assert_allclose(got.cpu().numpy(), ref[0].numpy(), rtol=1e-4, atol=1e-4)
    else:  # a GPU rounds P to bf16 before P V: FlashMLA's prefill tolerances
        c = compare("out (float32 buffer) vs float64", got, ref[0], **gpu_tolerances(V_RMS, kind="prefill")[0])
        assert c.ok, c.message


@pytest.mark.parametrize("version", VERSIONS)
def test_a_sequence_is_bitwise_the_same_in_any_batch(version):
    """No version splits a sequence's keys: its out and lse do not depend on the rest of the batch."""
    q, k, v, cu_q, cu_k, _ = make_case([20, 33, 5], [30, 40, 70], seed=8)
    out, lse = mp.mla_prefill(q, k, v, cu_q, cu_k, 33, version=version, batch_invariant=True)
    a, c = int(cu_q[1]), int(cu_k[1])
    one = dict(dtype=torch.int32, device=DEVICE)
    alone = mp.mla_prefill(q[a:a + 33], k[c:c + 40], v[c:c + 40], torch.tensor([0, 33], **one),
                           torch.tensor([0, 40], **one), 33, version=version)
    assert torch.equal(out[a:a + 33], alone[0]) and torch.equal(lse[:, a:a + 33], alone[1])


def test_the_input_checks():
    q, k, v, cu_q, cu_k, _ = make_case([4, 6], [4, 6], seed=10)
    with pytest.raises(ValueError, match=r"q must be \[total_q, h, 192\]"):
        mp.mla_prefill(q[..., :128], k, v, cu_q, cu_k, 6)
    with pytest.raises(ValueError, match=r"v must be \[total_k=10, h=2, 128\]"):
        mp.mla_prefill(q, k, k, cu_q, cu_k, 6)
    with pytest.raises(TypeError, match="cu_seqlens_q must be a contiguous int32"):
        mp.mla_prefill(q, k, v, cu_q.long(), cu_k, 6)
    with pytest.raises(TypeError, match="k and v must have q's dtype"):
        mp.mla_prefill(q, k.half(), v.half(), cu_q, cu_k, 6)
    with pytest.raises(TypeError, match="max_seqlen_q must be an int"):
        mp.mla_prefill(q, k, v, cu_q, cu_k, 6.0)
    with pytest.raises(ValueError, match="version must be one of"):
        mp.mla_prefill(q, k, v, cu_q, cu_k, 6, version="planned")
    with pytest.raises(ValueError, match="sparse_mla_prefill"):
        mp.mla_prefill(q, k, v, cu_q, cu_k, 6, version="prefill_sparse")
    with pytest.raises(TypeError, match="unknown option"):
        mp.mla_prefill(q, k, v, cu_q, cu_k, 6, num_splits=2)
    # what costs a device sync on a GPU is checked in the interpreter (check_lengths=True anywhere)
    with pytest.raises(ValueError, match="max_seqlen_q=5, but a sequence has 6 queries"):
        mp.mla_prefill(q, k, v, cu_q, cu_k, 5, check_lengths=True)
    with pytest.raises(ValueError, match="cu_seqlens_k must start at 0, never decrease"):
        mp.mla_prefill(q, k, v, cu_q, cu_k.flip(0), 6, check_lengths=True)
    with pytest.raises(ValueError, match="seqused_k must lie in"):
        mp.mla_prefill(q, k, v, cu_q, cu_k, 6, seqused_k=torch.tensor([5, 6], dtype=torch.int32, device=DEVICE),
                       check_lengths=True)


def test_empty_calls_launch_nothing():
    q, k, v, cu_q, cu_k, _ = make_case([0, 0], [3, 0], seed=11)
    version, launches, out, lse = mp.prepare(q, k, v, cu_q, cu_k, 0)
    assert launches == [] and out.shape == (0, 2, 128) and lse.shape == (2, 0)
