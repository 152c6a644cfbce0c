"""The Triton sparse decode kernel (kernels/sparse_decode.py) against the float64 numpy
reference mlacourse.sparse.sparse_decode (CPU: Triton's interpreter; compiled on a GPU).

Cases in FlashMLA's test style: every cache row that no index names is poisoned (0xFF bytes:
a NaN code, a NaN scale, NaN rope), so a kernel that reads one produces NaN; -1 entries
scattered anywhere in the lists, a query token whose list is all -1, duplicate indices, top-k
lists shorter than a tile, ragged batches built the way a server builds them (the lightning
indexer's top-k over sequences of different lengths, causal within s_q > 1, then the block
table turned into physical indices), odd page sizes, 128 heads."""
import numpy as np
import pytest
import torch

from kernels import fp8 as kfp8
from kernels.mla_decode import VERSION_TABLE, mla_decode_with_kvcache
from kernels.reference import compare, reference_sparse_decode, value_rms
from kernels import sparse_decode
from kernels.sparse_decode import check_indices, prepare, sparse_mla_decode_with_kvcache
from mlacourse import sparse as S
from mlacourse.fp8 import pack_fp8_row, unpack_fp8_row
from tests.test_kernels import DEVICE, LSE_TOL, OUT_TOL, assert_references

SPARSE = VERSION_TABLE["sparse"]
# Tolerances: FlashMLA's sparse decode test (out abs 1e-3 or rel 2.01/128, cosine 5e-6; lse abs
# 1e-6 or rel 8.01/65536), the out atol scaled from FlashMLA's V rms 0.1 to each case's
# (kernels.reference.gpu_tolerances(v_rms, sparse=True)); in the interpreter the kernel itself is
# held to the interpreter's tolerances (OUT_TOL, LSE_TOL: it truncates fp32 -> bf16 on the store).


def case_v_rms(cache, idx) -> float:
    """rms of the V values (dequantized latents) of the rows the indices name."""
    rows = np.asarray(cache).reshape(-1, 656)[np.unique(idx[idx >= 0])]
    return value_rms(torch.from_numpy(unpack_fp8_row(rows)[:, :512])) if rows.size else 1.0


def references(q, cache, idx, softmax_scale=None):
    """(float64, GPU-like) references, each (out, lse), on the CPU."""
    qc, cc, ic = q.cpu(), torch.as_tensor(cache).cpu(), torch.as_tensor(idx)
    ops = SPARSE.gpu_operands(q.dtype)
    return (reference_sparse_decode(qc, cc, ic, softmax_scale),
            reference_sparse_decode(qc, cc, ic, softmax_scale, mode="gpu", operands=ops))


def served_case(lens, s_q, h_q, topk, page, seed=0, extra_blocks=3, scales="pow2"):
    """A batch as a server builds it: per sequence a shuffled set of pages, the lightning
    indexer's top-k of random scores over its own tokens (causal among the s_q new tokens,
    -1 padding when fewer tokens than topk exist), physical indices through the block table.
    FP8 rows packed with `scales` (mlacourse.fp8's rule). Returns q (bf16 torch), cache (uint8
    numpy, unused rows poisoned), indices (int64 numpy)."""
    rng = np.random.default_rng(seed)
    need = [-(-n // page) for n in lens]
    num_blocks = sum(need) + extra_blocks
    perm = 1 + rng.permutation(num_blocks - 1)  # page 0 stays poisoned: a -1 entry read as row 0 gives NaN
    table = np.full((len(lens), max(max(need), 1)), 2**31 - 1, dtype=np.int64)  # unused entries out of range
    nxt = 0
    for i, n in enumerate(lens):
        table[i, :need[i]] = perm[nxt:nxt + need[i]]
        nxt += need[i]
    pos = np.full((len(lens), s_q, topk), -1, dtype=np.int64)
    for i, n in enumerate(lens):
        if n:  # token j of the s_q new ones sees n - s_q + j + 1 tokens (bottom-right causal)
            visible = np.clip(n - s_q + 1 + np.arange(s_q), 0, n)
            pos[i] = S.index_topk(rng.standard_normal((s_q, n)), topk, n_visible=visible)
    idx = S.physical_indices(pos, table, page)
    cache = S.random_fp8_cache(rng, num_blocks, page, idx[idx >= 0], magnitude=(0.3, 3.0), scales=scales)
    q = torch.from_numpy(rng.standard_normal((len(lens), s_q, h_q, 576))).to(torch.bfloat16)
    return q, cache, idx


def run(q, cache, idx, softmax_scale=None, **options):
    """Kernel vs both references; out and lse start as NaN, so every element must be written."""
    qd, cd, idd = q.to(DEVICE), torch.from_numpy(cache).to(DEVICE), torch.from_numpy(idx).to(torch.int32).to(DEVICE)
    launches, out, lse = prepare(qd, cd, idd, softmax_scale=softmax_scale, **options)
    out.fill_(float("nan"))
    lse.fill_(float("nan"))
    for launch in launches:
        launch()
    ref64, ref_gpu = references(q, cache, idx, softmax_scale)
    tag = f"[b={q.shape[0]}, s_q={q.shape[1]}, h_q={q.shape[2]}, topk={idx.shape[2]}, page={cache.shape[1]}, " \
          f"{options}]"
    assert_references(tag, out, lse, ref64, ref_gpu, case_v_rms(cache, idx), sparse=True)
    return out, lse


def test_ragged_served_batch_with_an_empty_sequence():
    # lengths below, at and above topk; a 0-length sequence has only -1 entries
    q, cache, idx = served_case([0, 3, 40, 17, 100], s_q=2, h_q=8, topk=24, page=16, seed=1)
    assert (idx[0] == -1).all() and (idx[1, 0] == -1).sum() == 24 - 2  # causal: 2 of 3 tokens visible
    out, lse = run(q, cache, idx, block_n=16)  # two tiles of 16 over a list of 24
    assert (out[0] == 0).all() and (lse[0] == float("-inf")).all()


def test_invalid_entries_scattered_anywhere_and_one_token_all_invalid():
    q, cache, idx = served_case([90, 70, 64], s_q=2, h_q=4, topk=33, page=16, seed=2)
    rng = np.random.default_rng(3)
    idx[rng.random(idx.shape) < 0.3] = -1  # holes at the front, the middle, the end
    idx[1, 1] = -1  # one query token with no key at all
    idx[2, 0, 0] = idx[2, 0, -1] = -1
    _, lse = run(q, cache, idx, block_n=16)
    assert (lse[1, :, 1] == float("-inf")).all() and torch.isfinite(lse[1, :, 0]).all()


def test_duplicate_indices_count_twice():
    q, cache, idx = served_case([50], s_q=1, h_q=4, topk=12, page=16, seed=4)
    idx[0, 0, 6:] = idx[0, 0, :6]  # every row listed twice
    out2, _ = run(q, cache, idx)
    idx1 = idx.copy()
    idx1[0, 0, 6:] = -1
    out1, lse1 = run(q, cache, idx1)
    # listing each row twice doubles every weight: the same softmax, lse + log 2
    _, lse2 = run(q, cache, idx)
    assert torch.allclose(lse2, lse1 + np.log(2.0), atol=1e-4)
    assert torch.allclose(out2.float(), out1.float(), atol=1e-2)
    idx_mixed = idx1.copy()
    idx_mixed[0, 0, 6] = idx[0, 0, 0]  # one row twice, the others once: the output moves
    out_m, _ = run(q, cache, idx_mixed)
    assert not torch.allclose(out_m.float(), out1.float(), atol=1e-3)


@pytest.mark.parametrize("topk", [1, 5, 16])
def test_topk_smaller_than_a_tile(topk):
    q, cache, idx = served_case([30, 9], s_q=1, h_q=3, topk=topk, page=8, seed=5 + topk)
    run(q, cache, idx, block_n=32)  # a tile wider than the list: its tail is masked


@pytest.mark.parametrize("page", [1, 2, 61])
def test_any_page_size(page):
    # FlashMLA's sparse tests use pages of 2, 61, 69, 576 tokens: the physical index is
    # page * page_block_size + slot for any size, and the kernel divides it back
    q, cache, idx = served_case([70, 130], s_q=1, h_q=2, topk=20, page=page, seed=10 + page)
    run(q, cache, idx)


def test_128_heads_and_a_softmax_scale():
    q, cache, idx = served_case([300], s_q=1, h_q=128, topk=48, page=64, seed=20)
    run(q, cache, idx, softmax_scale=192 ** -0.5)  # two programs of 64 heads share the list


def test_large_scores_per_query_token():
    """One query token's scores near +750, the other's near -750 (exp overflows at 709)."""
    rng = np.random.default_rng(21)
    v = rng.standard_normal(576)
    rows = v + 0.01 * rng.standard_normal((6, 576))  # six similar keys
    cache = np.full((2, 16, 1, 656), 0xFF, np.uint8)
    cache[1, 3:9, 0] = pack_fp8_row(rows[:, :512], rows[:, 512:])
    idx = np.broadcast_to(np.array([19, -1, 20, 21, 22, 23, 24, -1]), (1, 2, 8)).copy()
    kv = unpack_fp8_row(cache[1, 3:9, 0])
    direction = kv.mean(0) / (kv.mean(0) @ kv.mean(0))
    qn = rng.standard_normal((1, 2, 2, 576)) * 0.01
    qn[0, 0] += direction * 750 / 576 ** -0.5
    qn[0, 1] -= direction * 750 / 576 ** -0.5
    _, lse = run(torch.from_numpy(qn).to(torch.bfloat16), cache, idx)
    assert lse[0, :, 0].min() > 700 and lse[0, :, 1].max() < -700


def test_non_contiguous_index_batch():
    q, cache, idx = served_case([20, 20, 20], s_q=2, h_q=2, topk=8, page=16, seed=22)
    idx_t = torch.from_numpy(idx).to(torch.int32).transpose(0, 1).contiguous().transpose(0, 1)  # strides differ
    assert not idx_t.is_contiguous() and idx_t.stride(2) == 1
    out, lse = sparse_mla_decode_with_kvcache(q.to(DEVICE), torch.from_numpy(cache).to(DEVICE), idx_t.to(DEVICE))
    ref64, ref_gpu = references(q, cache, idx)
    assert_references("[non-contiguous indices]", out, lse, ref64, ref_gpu, case_v_rms(cache, idx), sparse=True)


def test_every_token_selected_equals_the_dense_fp8_kernel():
    """Sparse over all of a sequence's tokens is dense decode: same rows, same softmax."""
    rng = np.random.default_rng(23)
    lens, page = [37, 64], 16
    kv = torch.from_numpy(rng.standard_normal((8, page, 1, 576)))
    cache = kfp8.pack_fp8_kvcache(kv)  # every row finite
    table = torch.tensor([[5, 2, 7, 0], [1, 3, 6, 4]], dtype=torch.int32)
    q = torch.from_numpy(rng.standard_normal((2, 1, 4, 576))).to(torch.bfloat16)
    pos = np.full((2, 1, 64), -1)
    for i, n in enumerate(lens):
        pos[i, 0, :n] = np.arange(n)
    idx = torch.from_numpy(S.physical_indices(pos, table.numpy(), page)).to(torch.int32)
    sparse_out, sparse_lse = sparse_mla_decode_with_kvcache(q, cache, idx)
    dense_out, dense_lse = mla_decode_with_kvcache(q, cache, table, torch.tensor(lens, dtype=torch.int32), 512,
                                                   is_fp8_kvcache=True, version="tiled")
    assert compare("out", sparse_out, dense_out, **OUT_TOL).ok
    assert compare("lse", sparse_lse, dense_lse, **LSE_TOL).ok


@pytest.mark.parametrize("num_splits", [2, 3, 7, 9])
def test_top_k_split_and_combine(num_splits):
    """Lists of 100 entries in 7 tiles of 16, cut into pieces of whole tiles (9: two pieces
    empty), -1 holes anywhere, one token with none valid: the combine merges the pieces exactly
    as one program reads the whole list."""
    q, cache, idx = served_case([150, 90, 40], s_q=2, h_q=8, topk=100, page=16, seed=50 + num_splits)
    rng = np.random.default_rng(num_splits)
    idx[rng.random(idx.shape) < 0.2] = -1
    idx[0, 1] = -1  # every piece of this token sees nothing: out 0, lse -inf
    idx[1, 0, :60] = -1  # the first pieces of this one see nothing, the later ones do
    launches = prepare(q, torch.from_numpy(cache), torch.from_numpy(idx).to(torch.int32), block_n=16,
                       num_splits=num_splits)[0]
    assert [lc.label.split()[0] for lc in launches] == ["sparse", "combine"] and launches[0].grid[2] == num_splits
    out, lse = run(q, cache, idx, block_n=16, num_splits=num_splits)
    whole, whole_lse = run(q, cache, idx, block_n=16, num_splits=1)
    assert (out[0, 1] == 0).all() and (lse[0, :, 1] == float("-inf")).all()
    assert torch.isfinite(lse[1, :, 0]).all()
    c = compare("split vs one piece", lse, whole_lse, atol=1e-5, rtol=1e-5)
    assert c.ok, c.message


def test_default_split_fills_the_sms():
    """default_topk_splits: pieces only while the batch leaves SMs idle, never shorter than a tile."""
    f = sparse_decode.default_topk_splits
    assert f(1, 1, 128, 2048, 132, 64, 32) == 64  # 2 programs per token; 2048 entries allow 64 tiles of 32
    assert f(1, 2, 128, 2048, 132, 64, 32) == 33  # 4 programs x 33 = 132
    assert f(33, 2, 128, 2048, 132, 64, 32) == 1 and f(65, 1, 128, 2048, 132, 64, 32) == 2
    assert f(64, 1, 64, 2048, 132, 64, 32) == 3 and f(132, 1, 64, 2048, 132, 64, 32) == 1
    assert f(1, 1, 16, 20, 132, 16, 32) == 1  # one tile: nothing to cut
    # what the launcher builds for FlashMLA's V3.2 decode shape at b = 1 and b = 64 (a GPU's tiles)
    for b, want in ((1, 33), (64, 1)):
        q = torch.zeros(b, 2, 128, 576, dtype=torch.bfloat16)
        kv = torch.zeros(4, 64, 1, 656, dtype=torch.uint8)
        idx = torch.zeros(b, 2, 2048, dtype=torch.int32)
        launches = prepare(q, kv, idx, gpu=True, check_indices=False, num_sms=132)[0]
        assert launches[0].grid == (2, 2 * b, want) and len(launches) == (2 if want > 1 else 1)


def test_batch_invariant_reads_each_list_in_one_program():
    q, cache, idx = served_case([300], s_q=1, h_q=4, topk=200, page=16, seed=60)
    args = (q, torch.from_numpy(cache), torch.from_numpy(idx).to(torch.int32))
    assert prepare(*args, block_n=16)[0][0].grid[2] > 1  # alone in its batch, the list is cut
    assert prepare(*args, block_n=16, batch_invariant=True)[0][0].grid[2] == 1
    with pytest.raises(ValueError, match="batch_invariant=True reads each top-k list in one program"):
        prepare(*args, batch_invariant=True, num_splits=2)
    with pytest.raises(TypeError, match="num_splits= or num_sms="):
        prepare(*args, num_splits=2, num_sms=4)
    with pytest.raises(ValueError, match="num_splits must be an integer >= 1"):
        prepare(*args, num_splits=0)


def test_one_token_in_two_batches():
    """A query token alone, then beside two others: the default split count follows the batch
    (8 pieces alone, 3 beside them, on 8 "SMs"), so its last bits may move; batch_invariant=True reads
    each list in one program and gives the same bits in both batches."""
    q, cache, idx = served_case([300, 250, 280], s_q=1, h_q=4, topk=200, page=16, seed=61)
    args_all = (q.to(DEVICE), torch.from_numpy(cache).to(DEVICE), torch.from_numpy(idx).to(torch.int32).to(DEVICE))
    args_one = tuple(t[:1] if t.dim() >= 3 and t.shape[0] == 3 else t for t in args_all)
    kw = dict(block_n=16, num_sms=8)  # 8 "SMs": one token is cut into 8 pieces, three into 3
    assert prepare(*args_one, **kw)[0][0].grid[2] != prepare(*args_all, **kw)[0][0].grid[2]
    one = sparse_mla_decode_with_kvcache(*args_one, batch_invariant=True, block_n=16)
    many = sparse_mla_decode_with_kvcache(*args_all, batch_invariant=True, block_n=16)
    assert torch.equal(one[0][0], many[0][0]) and torch.equal(one[1][0], many[1][0])
    split_one = sparse_mla_decode_with_kvcache(*args_one, **kw)
    split_many = sparse_mla_decode_with_kvcache(*args_all, **kw)
    c = compare("the token, two batches", split_one[1][0], split_many[1][0], atol=1e-5, rtol=1e-5)
    assert c.ok, c.message  # the same answer, up to the order of the merge


def test_the_kernel_is_registered_in_the_version_table():
    v = VERSION_TABLE["sparse"]
    assert v.call == "sparse" and v.caches == ("fp8",) and v.interpreter and "-1" in v.summary
    assert v.launch is sparse_decode.launches  # the table runs the kernel this file tests


def _args(**over):
    q, cache, idx = served_case([20], s_q=2, h_q=2, topk=8, page=16, seed=30)
    args = dict(q=q, kv_cache=torch.from_numpy(cache), indices=torch.from_numpy(idx).to(torch.int32))
    args.update(over)
    return args


@pytest.mark.parametrize("change, error, match", [
    (lambda a: dict(a, indices=a["indices"].long()), TypeError, "int32"),
    (lambda a: dict(a, kv_cache=torch.zeros(2, 16, 1, 576, dtype=torch.bfloat16)), TypeError, "FP8 rows"),
    (lambda a: dict(a, q=a["q"].float()), TypeError, "bfloat16"),
    (lambda a: dict(a, q=a["q"][..., :512].contiguous()), ValueError, "576"),
    (lambda a: dict(a, indices=a["indices"][:, :, :0]), ValueError, "topk >= 1"),
    (lambda a: dict(a, indices=a["indices"].transpose(1, 2).contiguous().transpose(1, 2)), ValueError,
     "contiguous"),
    (lambda a: dict(a, q=a["q"].expand(40000, 2, 2, 576),  # no copy: the grid check comes first
                    indices=a["indices"].expand(40000, 2, 8)), ValueError, "grid"),
])
def test_bad_inputs_are_named(change, error, match):
    with pytest.raises(error, match=match):
        sparse_mla_decode_with_kvcache(**change(_args()))


@pytest.mark.parametrize("bad", ["-2", "n_rows", "2**31-1"])
def test_out_of_range_indices_are_caught_before_the_kernel(bad):
    """The kernel itself checks nothing (FlashMLA's does not either); the host check runs by
    default in the interpreter, where an out-of-range load would crash the process."""
    args = _args()
    n_rows = args["kv_cache"].shape[0] * args["kv_cache"].shape[1]
    args["indices"][0, 0, 3] = eval(bad, {"n_rows": n_rows})
    with pytest.raises(ValueError, match="neither -1 nor a row"):
        sparse_mla_decode_with_kvcache(**args)
    launches, _, _ = prepare(**args, check_indices=False)  # the caller's promise: built, not checked
    assert len(launches) == 1
    with pytest.raises(ValueError, match="illegal address"):
        check_indices(args["indices"], args["kv_cache"])


V32_CASE = dict(lens=[5000, 2047, 1, 9000], s_q=2, h_q=128, topk=2048, page=64, seed=40)


def test_v32_shape_with_amax_scales_would_fail_on_a_gpu():
    """DeepSeek-V3.2's decode shape (128 heads, s_q 2, top-k 2048) with FP8 rows packed with
    max|x|/448 scales, in emulation: on a GPU the bf16 rounding of code * scale moves lse past
    FlashMLA's 8.01/65536 for a large share of the values -- the first GPU run would have failed
    on it. (The same shape with FlashMLA's power-of-two scales, the default, is a case of the GPU
    check's matrix: tests/test_kernel_gpu_matrix.py::test_sparse, at its size in emulation.)"""
    from kernels.reference import gpu_tolerances
    q, cache, idx = served_case(**V32_CASE, scales="amax")
    ref64, ref_gpu = references(q, cache, idx, 192 ** -0.5)
    _, lse_tol = gpu_tolerances(case_v_rms(cache, idx), sparse=True)
    c = compare("GPU-like lse vs float64, max|x|/448 scales", ref_gpu[1], ref64[1], **lse_tol)
    assert not c.ok and c.n - c.n_ok > c.n // 10, c.message  # a large share of the lse values out


@pytest.mark.slow
def test_sm90_compile():
    """The shipped configurations compile for sm_90 without a GPU (kernels.compile_report
    --only sparse, about 30 s): within Hopper's shared memory, 64-row tiles on wgmma."""
    import json
    import os
    import subprocess
    import sys

    from kernels.compile_report import SMEM_LIMIT_SM90
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # the interpreter cannot compile
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    proc = subprocess.run([sys.executable, "-m", "kernels.compile_report", "--only", "sparse", "--json", "--jobs", "2"],
                          capture_output=True, text=True, env=env, timeout=900, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = [r for r in rows if r["label"] != "combine"]  # the example's small batch cuts its lists: a combine too
    assert [r["label"] for r in rows] == [f"sparse fp8 BLOCK_M={m}" for m in (16, 32, 64)], rows
    for r in rows:
        assert not r.get("error") and 0 < r["shared"] <= SMEM_LIMIT_SM90 and r["regs"] <= 255, r
        assert r["loop"] is not None and r["ratio"] >= 1.0, r  # the MMA loop was found in the SASS
    assert rows[-1]["wgmma"], rows[-1]
