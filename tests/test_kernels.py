"""Triton MLA decode vs its two references, every version (CPU: Triton's interpreter).

Cases in FlashMLA's test style: NaN-poisoned unused cache slots and spare pages,
out-of-range unused block-table entries, scattered pages, zero-length sequences,
lengths around the tile size, causal s_q > 1 with rows that see no key, several page
sizes, 128 heads, FP8 rows. Every case is checked three ways (kernels.reference.
check_against_references): the GPU-like reference (the GPU's roundings, emulated) against
float64 at the tolerances a GPU run is held to -- so that what passes here is what a GPU
will pass -- and the kernel against both references. Failures report max abs/rel error,
where, how many elements are within tolerance and the cosine difference. The GPU check's cases
(FlashMLA's shapes at full size: compiled on a GPU, in emulation and shrunk in the interpreter
elsewhere) are tests/test_kernel_gpu_matrix.py's, through the same check."""
import math

import numpy as np
import pytest
import torch

from kernels import fp8 as kfp8
from kernels.mla_decode import DEFAULT_VERSION, VERSION_TABLE, default_num_splits, mla_decode_with_kvcache
from kernels.reference import INTERPRETER_LSE_TOL, INTERPRETER_OUT_TOL, check_against_references, compare, \
    gpu_tolerances, reference_decode
from mlacourse.paged import make_paged_cache

# Without CUDA the kernels run in Triton's interpreter on CPU tensors (conftest sets
# TRITON_INTERPRET=1); with CUDA the same tests run compiled on the GPU.
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the versions that run here (their rows of the table say where): on CPU those with an interpreter
DENSE = {n: v for n, v in VERSION_TABLE.items() if v.call == "dense"}  # block_table + cache_seqlens
VERSIONS = tuple(n for n, v in DENSE.items() if v.runs_on(DEVICE))
FP8_VERSIONS = tuple(n for n in VERSIONS if "fp8" in DENSE[n].caches)
# make_case draws q and every cache value from N(0, 1): V's rms is 1, ten times FlashMLA's
# randn/10, so the GPU's out atol is FlashMLA's 8e-4 scaled by 10 (kernels.reference.gpu_tolerances:
# out abs 8e-3 or rel 2.01/128, cosine 5e-6; lse abs 1e-6 or rel 8.01/65536, cosine 1e-7).
V_RMS = 1.0
GPU_OUT_TOL, GPU_LSE_TOL = gpu_tolerances(V_RMS)
# the kernel's own tolerance here: the GPU's, or the interpreter's (which truncates fp32 -> bf16)
OUT_TOL, LSE_TOL = (GPU_OUT_TOL, GPU_LSE_TOL) if DEVICE == "cuda" else (INTERPRETER_OUT_TOL, INTERPRETER_LSE_TOL)


def make_case(lens, page=64, s_q=1, h_q=4, dtype=torch.bfloat16, fp8=False, seed=0, scales="pow2"):
    """q [b, s_q, h_q, 576]; a paged cache whose unused slots are NaN and whose unused
    table entries are 2**31 - 1 (mlacourse.paged.make_paged_cache). FP8 rows are packed with
    `scales` (mlacourse.fp8: "pow2", FlashMLA's, or "amax")."""
    rng = np.random.default_rng(seed)
    seqs = [rng.standard_normal((n, 1, 576)) for n in lens]
    kv, bt, sl = make_paged_cache(seqs, page, rng)  # kv [num_blocks, page, 1, 576] float64
    kv = torch.from_numpy(kv)
    cache = kfp8.pack_fp8_kvcache(kv, scales) if fp8 else kv.to(dtype)
    q = torch.from_numpy(rng.standard_normal((len(lens), s_q, h_q, 576))).to(dtype)
    bt, sl = torch.from_numpy(bt).to(torch.int32), torch.from_numpy(sl)
    return tuple(t.to(DEVICE) for t in (q, cache, bt, sl))


def page_for(version, page):
    """The case's page size, or the version's smallest page where that is larger (its table row)."""
    return max(page, DENSE[version].min_page)


def heads_for(version, h_q):
    """A version with one program per query row runs them one by one in the interpreter: 2 heads."""
    return 2 if DENSE[version].block_m == (1,) else h_q


def references(q, cache, bt, sl, fp8=False, causal=False, softmax_scale=None, version=DEFAULT_VERSION):
    """(float64 reference, GPU-like reference of `version`), each (out, lse), on the CPU."""
    args = (q.cpu(), cache.cpu(), bt.cpu(), sl.cpu(), 512, softmax_scale, causal, fp8)
    operands = VERSION_TABLE[version].gpu_operands(q.dtype)  # the live table: a test may register a version
    return reference_decode(*args), reference_decode(*args, mode="gpu", operands=operands)


def assert_references(tag, out, lse, ref64, ref_gpu, v_rms=V_RMS, sparse=False):
    """kernels.reference.check_against_references, every comparison asserted. out = lse = None: a
    case whose kernel cannot run here, in emulation (the GPU-like reference within the GPU's
    tolerances of float64: what a GPU run checks first)."""
    for c in check_against_references(tag, out, lse, ref64, ref_gpu, DEVICE == "cuda", v_rms, sparse):
        assert c.ok, c.message


def check(q, cache, bt, sl, fp8=False, causal=False, softmax_scale=None, **options):
    out, lse = mla_decode_with_kvcache(q, cache, bt, sl, 512, softmax_scale=softmax_scale, causal=causal,
                                       is_fp8_kvcache=fp8, **options)
    version = options.get("version", DEFAULT_VERSION)
    ref64, ref_gpu = references(q, cache, bt, sl, fp8, causal, softmax_scale, version)
    assert out.dtype == q.dtype and out.shape == ref64[0].shape
    assert lse.dtype == torch.float32 and lse.shape == ref64[1].shape
    tag = f"[{version}, lens={sl.tolist()}, s_q={q.shape[1]}, h_q={q.shape[2]}, " \
          f"page={cache.shape[1]}, causal={causal}, fp8={fp8}]"
    assert_references(tag, out, lse, ref64, ref_gpu)
    return out, lse


# lengths 0, 1, 63, 64, 65 and a non-multiple of the page, all in one batch
EDGE_LENS = [0, 1, 63, 64, 65, 150]


@pytest.mark.parametrize("version", [pytest.param(v, marks=pytest.mark.smoke) if v == "splitkv" else v
                                     for v in VERSIONS])  # smoke: one kernel in the interpreter
def test_edge_lengths(version):
    q, cache, bt, sl = make_case(EDGE_LENS, page=page_for(version, 64), h_q=heads_for(version, 16))
    out, lse = check(q, cache, bt, sl, version=version)
    assert torch.all(out[0] == 0) and torch.all(lse[0] == -math.inf), "zero-length sequence: out 0, lse -inf"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("s_q", [2, 4])
def test_causal_rows_without_keys(version, s_q):
    # length 1 with s_q rows: only the last row sees a key; the others must be 0 / -inf
    q, cache, bt, sl = make_case([1, 3, 70], page=page_for(version, 16), s_q=s_q, h_q=heads_for(version, 8), seed=s_q)
    out, lse = check(q, cache, bt, sl, causal=True, version=version)
    assert torch.all(lse[0, :, :s_q - 1] == -math.inf) and torch.all(out[0, :s_q - 1] == 0)
    assert torch.all(torch.isfinite(lse[0, :, s_q - 1]))


@pytest.mark.parametrize("version", FP8_VERSIONS)
def test_fp8_cache(version):
    q, cache, bt, sl = make_case([5, 64, 97], page=page_for(version, 32), h_q=heads_for(version, 16), fp8=True, seed=3)
    assert cache.dtype == torch.uint8 and cache.shape[-1] == 656
    check(q, cache, bt, sl, fp8=True, version=version)


def test_fp8_cache_with_amax_scales():
    """FP8 rows packed with max|x|/448 scales (the named option): the kernel reads them, but on a
    GPU it dequantizes to bf16, which rounds code * scale -- the lse moves past FlashMLA's
    8.01/65536. Predicted here by the GPU-like reference; on a GPU, the kernel agrees with the
    GPU-like reference and misses float64 by as much."""
    q, cache, bt, sl = make_case([5, 64, 97], page=32, h_q=16, fp8=True, seed=3, scales="amax")
    out, lse = mla_decode_with_kvcache(q, cache, bt, sl, 512, is_fp8_kvcache=True, version="tiled")
    ref64, ref_gpu = references(q, cache, bt, sl, True, False, None, "tiled")
    assert not compare("GPU-like lse vs float64", ref_gpu[1], ref64[1], **GPU_LSE_TOL).ok
    near = ref_gpu if DEVICE == "cuda" else ref64  # the interpreter rounds nothing
    for what, i, tol in (("out", 0, OUT_TOL), ("lse", 1, LSE_TOL)):
        c = compare(f"{what} vs the reference it should match", (out, lse)[i], near[i], **tol)
        assert c.ok, c.message
    if DEVICE == "cuda":
        assert not compare("lse vs float64", lse, ref64[1], **GPU_LSE_TOL).ok


@pytest.mark.parametrize("page", [16, 32, 128, 256])
def test_page_sizes(page):
    q, cache, bt, sl = make_case([page - 1, 2 * page + 7, 33], page=page, h_q=8, seed=page)
    check(q, cache, bt, sl, version="splitkv", num_splits=3)


@pytest.mark.parametrize("version", ["tiled", "splitkv"])
def test_128_heads_mla_scale(version):
    # DeepSeek's real call: 128 heads, softmax_scale = 192**-0.5 (peakier than 576**-0.5)
    q, cache, bt, sl = make_case([77, 130], page=64, h_q=128, seed=11)
    check(q, cache, bt, sl, softmax_scale=192 ** -0.5, version=version)


def test_splitkv_empty_splits_and_causal_fp16():
    # 16 splits over at most 3 tiles of 64: most splits are empty and must contribute nothing
    q, cache, bt, sl = make_case([0, 9, 130], page=16, s_q=2, h_q=8, dtype=torch.float16, seed=5)
    check(q, cache, bt, sl, causal=True, version="splitkv", num_splits=16)
    check(q, cache, bt, sl, causal=True, version="splitkv", num_splits=1, block_n=16)


def test_fp8_causal_splitkv_scattered():
    q, cache, bt, sl = make_case([2, 200], page=16, s_q=2, h_q=16, fp8=True, seed=8)
    assert len(set(bt[1, :13].tolist())) == 13  # 13 distinct, shuffled pages
    check(q, cache, bt, sl, fp8=True, causal=True, version="splitkv", num_splits=4)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("h_q", [1, 3])
def test_few_and_odd_heads(version, h_q):
    # s_q*h_q rows below tl.dot's minimum of 16 and not a power of two: masked rows in the tile
    q, cache, bt, sl = make_case([2, 50], page=page_for(version, 32), s_q=2, h_q=h_q, seed=30 + h_q)
    check(q, cache, bt, sl, causal=True, version=version)


@pytest.mark.parametrize("fp8", [False, True])
@pytest.mark.parametrize("rows", [16, 32, 64])
def test_gpu_tile_shapes_in_interpreter(rows, fp8):
    """The interpreter defaults to 64-key tiles; run the BLOCK_N that a GPU launch ships
    (default_launch) so that its tile boundaries are exercised here too."""
    from kernels.mla_decode import default_block_m, default_launch
    block_m = default_block_m(1, rows)
    block_n, _, stages = default_launch(block_m, fp8)
    q, cache, bt, sl = make_case([block_n - 1, 3 * block_n + 5], page=16, s_q=1, h_q=rows, fp8=fp8, seed=rows)
    check(q, cache, bt, sl, fp8=fp8, version="splitkv", block_m=block_m, block_n=block_n, num_stages=stages,
          num_splits=2)


def test_reference_matches_mlacourse():
    """The reference itself, against mlacourse.attention (numpy) on one sequence."""
    from mlacourse.attention import attention, causal_mask
    q, cache, bt, sl = make_case([0, 41], page=16, s_q=3, h_q=2, seed=2)
    out, lse = reference_decode(q, cache, bt, sl, causal=True)
    from kernels.reference import gather_sequence
    kv = gather_sequence(cache, bt, sl, 1).numpy()  # [41, 576]
    qi = q[1].double().cpu().numpy().transpose(1, 0, 2)  # [h_q, s_q, 576]
    o_np, l_np = attention(qi, kv[None], kv[None, :, :512], 576 ** -0.5, causal_mask(3, 41))
    np.testing.assert_allclose(out[1].numpy().transpose(1, 0, 2), o_np, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse[1].numpy(), l_np, rtol=1e-12)
    assert torch.all(out[0] == 0) and torch.all(lse[0] == -math.inf)


def test_reference_padded_matches_reference():
    from kernels.reference import reference_decode_padded
    q, cache, bt, sl = make_case([3, 40, 64], page=16, s_q=2, h_q=4, seed=4)
    bt = torch.where(bt == 2**31 - 1, torch.zeros_like(bt), bt)  # the padded gather needs in-range ids
    cache = torch.nan_to_num(cache)  # ...and finite padding (it masks the scores, then multiplies p=0 by V)
    for causal in (False, True):
        o1, l1 = reference_decode(q, cache, bt, sl, causal=causal)
        o2, l2 = reference_decode_padded(q, cache, bt, sl, causal=causal, dtype=torch.float64)
        c = compare("padded out", o2, o1, atol=1e-2, rtol=1e-2)  # out in q.dtype
        assert c.ok, c.message
        c = compare("padded lse", l2, l1, atol=1e-5, rtol=1e-5)  # float32 lse
        assert c.ok, c.message


def test_default_num_splits():
    # one long sequence on 132 SMs: split until ~2 programs per SM
    assert default_num_splits(1, 1, 128, 32768, 132) == 64  # capped at 64 (2 row blocks * 132)
    assert default_num_splits(1, 1, 16, 32768, 132) == 64
    # a full batch already fills the GPU: no split
    assert default_num_splits(128, 1, 128, 8192, 132) == 2
    assert default_num_splits(264, 1, 16, 8192, 132) == 1
    # short sequences are not cut below 4 tiles of 64 tokens
    assert default_num_splits(1, 1, 16, 300, 132) == 2


def test_compare_reports_mismatch():
    ref = torch.zeros(4, 3, dtype=torch.float64)
    got = ref.clone()
    got[2, 1] = 0.5
    c = compare("out", got, ref, atol=1e-3, rtol=1e-3)
    assert not c.ok and c.where == (2, 1) and (c.n_ok, c.n) == (11, 12) and c.max_abs == 0.5
    assert "11 of 12 elements within tolerance" in c.message and "(2, 1)" in c.message
    got[0, 0] = float("nan")
    assert not compare("out", got, ref, atol=1e3, rtol=1e3).ok, "NaN must never pass"
    inf = torch.tensor([-math.inf, 1.0])
    assert compare("lse", inf.clone(), inf, atol=0, rtol=0).ok
    assert not compare("lse", torch.tensor([math.inf, 1.0]), inf, atol=0, rtol=0).ok, "+inf is not -inf"


@pytest.mark.parametrize("bad, match", [
    (lambda a: dict(a, kv_cache=a["kv_cache"].expand(-1, -1, 2, -1).contiguous()), "h_kv=2"),
    (lambda a: dict(a, q=a["q"].float()), "bfloat16 or float16"),
    (lambda a: dict(a, q=a["q"][..., :512].contiguous()), "576"),
    (lambda a: dict(a, q=torch.cat([a["q"], a["q"]], dim=-1)[..., :576]), "contiguous"),
    (lambda a: dict(a, kv_cache=a["kv_cache"].half()), "kv_cache must hold"),
    (lambda a: dict(a, kv_cache=torch.zeros(4, 48, 1, 576, dtype=torch.bfloat16)), "power of two"),
    (lambda a: dict(a, block_table=a["block_table"].long()), "int32"),
    (lambda a: dict(a, cache_seqlens=a["cache_seqlens"][:1]), r"\[b=2\]"),
    (lambda a: dict(a, head_dim_v=128), "head_dim_v"),
    (lambda a: dict(a, version="fast"), "version"),
    (lambda a: dict(a, version="sparse"), "takes top-k indices, not a block table"),
    (lambda a: dict(a, version="tiled", plan=object()), "takes no plan"),
    (lambda a: dict(a, num_stagez=2), "unknown option"),
    (lambda a: dict(a, block_m=8), "block_m must be a power of two"),
    (lambda a: dict(a, version="naive", block_n=24), "block_n must be a power of two"),
    (lambda a: dict(a, num_splits=0), "num_splits"),
    (lambda a: dict(a, q=torch.zeros(2, 1, 129, 576, dtype=torch.bfloat16)), "h_q"),
    (lambda a: dict(a, is_fp8_kvcache=True), "FP8 rows"),
])
def test_errors(bad, match):
    q, cache, bt, sl = make_case([5, 9], page=16, h_q=2)
    args = dict(q=q, kv_cache=cache, block_table=bt, cache_seqlens=sl, head_dim_v=512)
    with pytest.raises((ValueError, TypeError), match=match):
        mla_decode_with_kvcache(**bad(args))


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(lens=st.lists(st.integers(0, 150), min_size=1, max_size=3), page=st.sampled_from([16, 32, 64]),
       s_q=st.integers(1, 3), h_q=st.integers(1, 20), causal=st.booleans(), fp8=st.booleans(),
       num_splits=st.integers(1, 5), fp16=st.booleans(), seed=st.integers(0, 2**16))
def test_splitkv_random_shapes(lens, page, s_q, h_q, causal, fp8, num_splits, fp16, seed):
    """Random batches (fixed example sequence: derandomized, so a failure reproduces)."""
    q, cache, bt, sl = make_case(lens, page=page, s_q=s_q, h_q=h_q, fp8=fp8, seed=seed,
                                 dtype=torch.float16 if fp16 else torch.bfloat16)
    check(q, cache, bt, sl, fp8=fp8, causal=causal, version="splitkv", num_splits=num_splits)
