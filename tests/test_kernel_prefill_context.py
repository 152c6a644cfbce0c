"""The chunked prefix context (kernels/prefill_context.py): the cached prefix expanded from the
paged latent cache chunk by chunk, attended (not causal) and merged by log-sum-exp with the new
tokens' causal part -- against float64 (mlacourse.layer's expand path over the whole context) and
the GPU-like reference (CPU: Triton's interpreter; compiled on a GPU).

The GPU check's prefill matrix (tests/gpu_check_prefill.py, run by tests/test_kernel_gpu_matrix.py::
test_prefill) holds the kernel's cases -- prefixes of 0 and on both sides of a chunk, several
chunks, a sequence with no new tokens, every attention version, 128-head and paged shapes at GPU
size in emulation -- on a cache whose unused slots are NaN and unused table entries out of range
(mlacourse.paged.make_paged_cache), with the workspace NaN-filled. This file holds what is the
chunked prefix's own: which workspace rows the chunks write (and which stay NaN, never read), the
launches of a call without a prefix, the expansion kernel alone, what the bf16 expansion costs,
the workspace's bytes equal to mlacourse.prefill.chunked_prefix_workspace, the input checks.

Which references, where. The expanded K and V are what the attention's dots take: on a GPU they
are stored in bf16 (kernels.prefill_context.workspace_dtype), so there the float64 reference is the
exact math OF THOSE bf16 K/V (reference_prefix_prefill(workspace_dtype=bf16)) and the GPU-like one
adds the GPU's other roundings (P, float32 partials). Triton's interpreter stores a float32
workspace and runs its dots in float32, so there the kernel is held to the exact math and the
GPU-like model of what it computes is the float32 one (operands float32). On every machine each
case also checks, in emulation, that what a GPU computes (the bf16 GPU-like reference) passes
FlashMLA's prefill tolerances against the float64 of its bf16 K/V -- so a green CPU run predicts
a green GPU run -- and, separately, what rounding the expansion to bf16 costs against the
unrounded expansion (a bound derived from the rounding, test_the_bf16_expansion_costs_at_most)."""
import math

import numpy as np
import pytest
import torch

from kernels import prefill_context as pc
from kernels.reference import check_against_references, compare, expand_latents, gather_sequence, gpu_tolerances, \
    reference_prefix_prefill, value_rms
from mlacourse import prefill as P
from mlacourse.paged import make_paged_cache
from tests.test_kernels import DEVICE

ON_GPU = DEVICE == "cuda"


def make_case(n_new, prefix, h=2, page=16, dtype=torch.bfloat16, seed=0):
    """q [total_q, h, 192]; a paged latent cache holding each sequence's prefix and new tokens (unused
    slots NaN, unused table entries out of range); w_uk, w_uv [h, 512, 128] scaled so K and V have
    rms about 1."""
    rng = np.random.default_rng(seed)
    lens = [a + b for a, b in zip(n_new, prefix)]
    kv, bt, sl = make_paged_cache([rng.standard_normal((n, 1, 576)) for n in lens], page, rng)
    cu = np.concatenate([[0], np.cumsum(n_new)]).astype(np.int32)
    q = rng.standard_normal((int(cu[-1]), h, 192))
    w_uk = rng.standard_normal((h, 512, 128)) / math.sqrt(512)
    w_uv = rng.standard_normal((h, 512, 128)) / math.sqrt(512)
    ts = [torch.from_numpy(kv).to(dtype), torch.from_numpy(bt).to(torch.int32), torch.from_numpy(sl),
          torch.from_numpy(cu), torch.from_numpy(q).to(dtype), torch.from_numpy(w_uk).to(dtype),
          torch.from_numpy(w_uv).to(dtype)]
    kv, bt, sl, cu, q, w_uk, w_uv = (t.to(DEVICE) for t in ts)
    return q, kv, bt, sl, cu, w_uk, w_uv


def references(case, chunk_tokens):
    """(float64, GPU-like) for this machine, and (float64 of bf16 K/V, GPU-like) of a GPU."""
    q, kv, bt, sl, cu, w_uk, w_uv = (t.cpu() for t in case)
    args = (q, kv, bt, sl, cu, w_uk, w_uv)
    gpu_pair = (reference_prefix_prefill(*args, workspace_dtype=q.dtype),
                reference_prefix_prefill(*args, mode="gpu", chunk_tokens=chunk_tokens))
    if ON_GPU:
        return gpu_pair, gpu_pair
    here = (reference_prefix_prefill(*args),
            reference_prefix_prefill(*args, mode="gpu", operands=torch.float32, workspace_dtype=None,
                                     chunk_tokens=chunk_tokens))
    return here, gpu_pair


def run(case, chunk_tokens, **options):
    q, kv, bt, sl, cu, w_uk, w_uv = case
    n_new = (cu[1:] - cu[:-1]).cpu()
    ws = pc.PrefixWorkspace.allocate(chunk_tokens, q.shape[0], q.shape[1], pc.workspace_dtype(q, ON_GPU), DEVICE,
                                     fill=float("nan"))
    out, lse = pc.mla_prefill_with_prefix(q, kv, bt, sl, cu, int(n_new.max()), w_uk, w_uv, chunk_tokens=chunk_tokens,
                                          workspace=ws, **options)
    (ref64, ref_gpu), (ref64_bf16, gpu_bf16) = references(case, chunk_tokens)
    v_rms = value_rms(ref64[0])
    tag = f"[n_new={n_new.tolist()}, cached={sl.tolist()}, chunk_tokens={chunk_tokens}, h={q.shape[1]}, {options}]"
    for c in check_against_references(tag, out, lse, ref64, ref_gpu, ON_GPU, v_rms, kind="prefill"):
        assert c.ok, c.message
    out_tol, lse_tol = gpu_tolerances(v_rms, kind="prefill")  # a GPU's result, in emulation
    for what, i, tol in (("out", 0, out_tol), ("lse", 1, lse_tol)):
        c = compare(f"GPU-like reference {what} vs float64 of the bf16 K/V {tag}", gpu_bf16[i], ref64_bf16[i], **tol)
        assert c.ok, c.message
    return out, lse, ws


def test_several_chunks_per_sequence():
    """chunk_tokens 64 over 4 sequences: 16 prefix tokens per sequence per iteration, 5 iterations
    for the 70-token prefix; a sequence with no new tokens, one with no prefix."""
    case = make_case([0, 1, 17, 5], [3, 0, 40, 70], seed=1)
    assert P.context_chunks(4, 70, 64, 16) == (16, 5)
    out, lse, ws = run(case, 64)
    assert torch.isfinite(out).all() and torch.isfinite(lse).all()
    # sequence i's 16 rows of the chunk workspace: the first min(16, prefix) written by some iteration
    # (the last one's still there), the others never -- still the NaN fill, and never read
    for i, p in enumerate((3, 0, 40, 70)):
        written = min(16, p)
        assert torch.isfinite(ws.k_chunk[i * 16:i * 16 + written]).all()
        assert torch.isnan(ws.k_chunk[i * 16 + written:(i + 1) * 16]).all()
    assert torch.isnan(ws.k_chunk[64:]).all()  # past b * per_seq: never written


def test_no_prefix_writes_the_causal_part_directly():
    case = make_case([7, 33], [0, 0], seed=3)
    launches = pc.prepare(*case[:5], 33, *case[5:])[0]
    assert [lc.label for lc in launches] == ["prefix_expand", "prefix_new prefill_causal BLOCK_M=32"]
    assert launches[1].args["out_ptr"].dtype == case[0].dtype  # no chunk to merge: the final out directly
    run(case, 64)


def test_the_expansion_kernel_writes_what_the_layer_expands():
    """Only the first launch (the new tokens' expansion), against mlacourse.layer.expand_kv on the
    rows gathered from the pages: one float32 rounding on a float32 workspace (the interpreter),
    one bf16 rounding on a GPU."""
    case = make_case([5, 12], [9, 30], seed=6)
    q, kv, bt, sl, cu, w_uk, w_uv = case
    ws = pc.PrefixWorkspace.allocate(64, q.shape[0], q.shape[1], pc.workspace_dtype(q, ON_GPU), DEVICE,
                                     fill=float("nan"))
    launches = pc.prepare(q, kv, bt, sl, cu, 12, w_uk, w_uv, chunk_tokens=64, workspace=ws)[0]
    launches[0]()
    step = 2.0 ** -8 if ON_GPU else 2.0 ** -20
    for i, (s, p) in enumerate([(5, 9), (12, 30)]):
        rows = gather_sequence(kv.cpu(), bt.cpu(), sl.cpu(), i)[p:]  # the new tokens' latent rows
        k, v = expand_latents(rows[:, :512], rows[:, 512:], w_uk.cpu().double(), w_uv.cpu().double())
        a = int(cu[i])
        got_k, got_v = ws.k_new[a:a + s].cpu().double().transpose(0, 1), ws.v_new[a:a + s].cpu().double().transpose(0, 1)
        assert torch.equal(got_k[..., 128:], k[..., 128:])  # the rope part: copied
        for got, want in ((got_k[..., :128], k[..., :128]), (got_v, v)):
            assert ((got - want).abs() <= step * want.abs() + 1e-6).all(), float((got - want).abs().max())


def test_the_bf16_expansion_costs_at_most_its_rounding():
    """What storing K and V in bf16 (as the dots take them on a GPU) costs against the unrounded
    expansion: each score q.k moves by at most u * scale * sum_d |q_d k_d| over the 128 rounded
    dims (u = 2^-8, bf16's unit roundoff, through float32), so each lse -- a smooth maximum of its
    scores -- by at most the largest such move over the keys it sees. FlashMLA's prefill lse
    tolerance (2.01/65536 relative) is below this: its test feeds bf16 K and V to the kernel, so it
    never sees this rounding, and neither does the GPU check (float64 of the bf16 K/V)."""
    case = make_case([6, 20], [40, 25], seed=7)
    q, kv, bt, sl, cu, w_uk, w_uv = (t.cpu() for t in case)
    exact = reference_prefix_prefill(q, kv, bt, sl, cu, w_uk, w_uv)
    rounded = reference_prefix_prefill(q, kv, bt, sl, cu, w_uk, w_uv, workspace_dtype=torch.bfloat16)
    scale, u = 192 ** -0.5, 2.0 ** -8 * (1 + 2.0 ** -15)
    worst = 0.0
    for i, (s, p) in enumerate([(6, 40), (20, 25)]):
        rows = gather_sequence(kv, bt, sl, i)
        k, _ = expand_latents(rows[:, :512], rows[:, 512:], w_uk.double(), w_uv.double())  # [h, n, 192]
        qi = q[int(cu[i]):int(cu[i]) + s].double().transpose(0, 1)  # [h, s, 192]
        moves = u * scale * torch.einsum("hsd,hnd->hsn", qi[..., :128].abs(), k[..., :128].abs())
        visible = torch.arange(p + s)[None, :] <= torch.arange(s)[:, None] + p
        bound = moves.masked_fill(~visible[None], 0).amax(dim=-1)  # [h, s]
        diff = (rounded[1] - exact[1])[:, int(cu[i]):int(cu[i]) + s].abs()
        assert (diff <= bound).all(), (diff - bound).max()
        worst = max(worst, float((diff / bound).max()))
    assert 0 < worst < 1
    rel = float(((rounded[1] - exact[1]).abs() / exact[1].abs()).max())
    assert rel > 2.01 / 65536  # past FlashMLA's lse tolerance: why the GPU check compares with the bf16 K/V


def test_the_workspace_is_what_the_chapter_counts():
    """PrefixWorkspace.allocate (a GPU's: bf16 K and V) takes exactly mlacourse.prefill.
    chunked_prefix_workspace's bytes; at V3's 128 heads and the default 4,096 prefix tokens the prefix
    part is 320 MiB whatever the prefix."""
    ws = pc.PrefixWorkspace.allocate(96, 40, 3, torch.bfloat16, "cpu")
    assert ws.nbytes() == pc.workspace_bytes(96, 40, 3)
    import dataclasses
    from mlacourse.config import DEEPSEEK_V3
    assert ws.nbytes() == P.chunked_prefix_workspace(96, 40, dataclasses.replace(DEEPSEEK_V3, n_heads=3))["total"]
    assert pc.DEFAULT_CHUNK_TOKENS == 4096 and P.chunked_prefix_workspace(4096, 1)["prefix K/V"] == 320 * 2**20


def test_the_input_checks():
    case = make_case([4, 6], [10, 3], seed=8)
    q, kv, bt, sl, cu, w_uk, w_uv = case
    with pytest.raises(TypeError, match=r"w_uk must be contiguous \[h=2, 512, 128\]"):
        pc.mla_prefill_with_prefix(q, kv, bt, sl, cu, 6, w_uk[:, :, :64], w_uv)
    with pytest.raises(TypeError, match="kv_cache must be contiguous"):
        pc.mla_prefill_with_prefix(q, kv.float(), bt, sl, cu, 6, w_uk, w_uv)
    with pytest.raises(ValueError, match="must count each sequence's new tokens"):
        pc.mla_prefill_with_prefix(q, kv, bt, sl - 5, cu, 6, w_uk, w_uv, check_lengths=True)
    with pytest.raises(ValueError, match="max_prefix=5, but a sequence has a prefix of 10"):
        pc.mla_prefill_with_prefix(q, kv, bt, sl, cu, 6, w_uk, w_uv, max_prefix=5, check_lengths=True)
    with pytest.raises(ValueError, match="less than one page"):
        pc.mla_prefill_with_prefix(q, kv, bt, sl, cu, 6, w_uk, w_uv, chunk_tokens=16)
    small = pc.PrefixWorkspace.allocate(32, 3, 2, pc.workspace_dtype(q, ON_GPU), DEVICE)
    with pytest.raises(ValueError, match="the workspace does not fit"):
        pc.mla_prefill_with_prefix(q, kv, bt, sl, cu, 6, w_uk, w_uv, chunk_tokens=32, workspace=small)
    with pytest.raises(ValueError, match="version must be one of"):
        pc.mla_prefill_with_prefix(q, kv, bt, sl, cu, 6, w_uk, w_uv, version="prefill_sparse")
