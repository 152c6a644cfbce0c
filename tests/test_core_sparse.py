"""mlacourse.sparse: the lightning indexer, its top-k, FlashMLA's sparse addressing, the sparse
decode reference and the arithmetic of a sparse step, each against a computation written
another way here (loops, dense attention, first-principles roofline numbers)."""
import math

import numpy as np
import pytest

from mlacourse import sparse as S
from mlacourse.attention import attention, causal_mask
from mlacourse.fp8 import pack_fp8_row, unpack_fp8_row
from mlacourse.hardware import GPUS
from mlacourse.paged import make_paged_cache


# ---- the indexer ---------------------------------------------------------------------------

def test_index_scores_match_a_loop():
    rng = np.random.default_rng(0)
    q, w, k = rng.standard_normal((3, 5, 8)), rng.standard_normal((3, 5)), rng.standard_normal((11, 8))
    got = S.index_scores(q, w, k)
    want = np.zeros((3, 11))
    for t in range(3):
        for s in range(11):
            want[t, s] = sum(w[t, j] * max(0.0, float(q[t, j] @ k[s])) for j in range(5))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_index_scores_relu_drops_negative_heads():
    # a head whose dot product is negative adds nothing, whatever its weight
    q = np.array([[[1.0, 0.0], [-1.0, 0.0]]])  # [T=1, H=2, D=2]
    k = np.array([[2.0, 0.0]])
    assert S.index_scores(q, np.array([[1.0, 1000.0]]), k)[0, 0] == 2.0
    assert S.index_scores(q, np.array([[-3.0, 1000.0]]), k)[0, 0] == -6.0  # weights may be negative


def test_index_scores_reject_mismatched_shapes():
    with pytest.raises(ValueError, match=r"q_idx \[T, H, D\]"):
        S.index_scores(np.zeros((2, 3, 4)), np.zeros((2, 4)), np.zeros((5, 4)))


def test_topk_tie_rule_and_order():
    scores = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 0.5]])
    # 3.0 at positions 1, 2, 4 (smaller position first), then 2.0 at 3, then 1.0 at 0
    assert S.index_topk(scores, 4).tolist() == [[1, 2, 4, 3]]
    assert S.index_topk(scores, 2).tolist() == [[1, 2]]


def test_topk_pads_with_minus_one_and_respects_visibility():
    scores = np.array([[5.0, 1.0, 9.0, 7.0], [5.0, 1.0, 9.0, 7.0]])
    got = S.index_topk(scores, 3, n_visible=[2, 4])
    assert got.tolist() == [[0, 1, -1], [2, 3, 0]]
    assert S.index_topk(scores, 6, n_visible=[0, 4]).tolist() == [[-1] * 6, [2, 3, 0, 1, -1, -1]]


def test_topk_matches_a_sort_on_random_scores_with_ties():
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 6, size=(7, 30)).astype(float)  # many ties
    vis = rng.integers(0, 31, size=7)
    got = S.index_topk(scores, 9, n_visible=vis)
    for t in range(7):
        order = sorted(range(vis[t]), key=lambda s: (-scores[t, s], s))[:9]
        assert got[t].tolist() == order + [-1] * (9 - len(order))


def test_topk_rejects_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        S.index_topk(np.array([[1.0, np.nan]]), 1)
    with pytest.raises(ValueError, match="topk"):
        S.index_topk(np.zeros((1, 3)), 0)
    with pytest.raises(ValueError, match="n_visible"):
        S.index_topk(np.zeros((1, 3)), 1, n_visible=[4])


def test_the_indexer_of_a_decode_step_is_causal_among_the_new_tokens():
    """index_topk with the visibility its docstring gives a decode step (causal_mask) --
    what problem 18's reference computes -- against the rule written out."""
    rng = np.random.default_rng(12)
    q, w, k = rng.standard_normal((3, 4, 8)), rng.standard_normal((3, 4)), rng.standard_normal((10, 8))
    scores = S.index_scores(q, w, k)
    got = S.index_topk(scores, 9, n_visible=causal_mask(3, 10).sum(axis=1))
    for t in range(3):
        visible = 10 - 3 + 1 + t  # 8, 9, 10 tokens
        want = sorted(range(visible), key=lambda s: (-scores[t, s], s))[:9]
        assert got[t].tolist() == want + [-1] * (9 - len(want))


def test_v32_config_values():
    assert (S.DSA_V32.index_n_heads, S.DSA_V32.index_head_dim, S.DSA_V32.index_topk) == (64, 128, 2048)
    assert S.DSA_V32.index_key_bytes == 128 + 4  # e4m3 codes + one float32 scale


# ---- FlashMLA's addressing ------------------------------------------------------------------

def _loop_physical(pos, table, page):
    out = np.empty_like(pos)
    for i, j, k in np.ndindex(*pos.shape):
        t = pos[i, j, k]
        out[i, j, k] = -1 if t == -1 else table[i, t // page] * page + t % page
    return out


def test_physical_indices_match_a_loop_and_keep_minus_one():
    rng = np.random.default_rng(2)
    table = rng.permutation(40).reshape(4, 10)
    pos = rng.integers(-1, 10 * 16, size=(4, 3, 25))
    got = S.physical_indices(pos, table, 16)
    assert np.array_equal(got, _loop_physical(pos, table, 16))
    assert np.array_equal(got == -1, pos == -1) and (pos == -1).any()


def test_physical_index_reads_the_logical_token_from_a_paged_cache():
    """flat_cache[physical] is the row the sequence stored at the logical position."""
    rng = np.random.default_rng(3)
    lens, page = [37, 1, 64, 100], 16
    seqs = [rng.standard_normal((n, 1, 4)) for n in lens]
    kv, table, _ = make_paged_cache(seqs, page, rng)  # NaN in unused slots, 2**31-1 in unused entries
    flat = kv.reshape(-1, 4)
    for i, n in enumerate(lens):
        pos = rng.integers(0, n, size=(1, 2, 10))  # [b=1, s_q=2, topk=10]
        pos[0, :, 9] = -1
        phys = S.physical_indices(pos, table[i:i + 1], page)
        assert np.array_equal(flat[phys[0, :, :9]], seqs[i][pos[0, :, :9], 0]) and (phys[0, :, 9] == -1).all()


def test_physical_indices_reject_positions_no_page_holds():
    table = np.array([[3, 1]])
    with pytest.raises(ValueError, match="neither -1 nor a position 0..31"):
        S.physical_indices(np.array([[[0, 32]]]), table, 16)
    with pytest.raises(ValueError, match="-2"):
        S.physical_indices(np.array([[[-2]]]), table, 16)
    with pytest.raises(TypeError, match="integer"):
        S.physical_indices(np.array([[[1.0]]]), table, 16)


# ---- sparse decode --------------------------------------------------------------------------

def _case(rng, b=2, s_q=2, h_q=3, topk=7, num_blocks=5, page=8, scale_q=1.0, idx=None):
    n_rows = num_blocks * page
    if idx is None:
        idx = rng.integers(0, n_rows, size=(b, s_q, topk))
        idx[rng.random(idx.shape) < 0.25] = -1
    idx = np.broadcast_to(idx, (b, s_q, np.shape(idx)[-1])).copy()
    cache = S.random_fp8_cache(rng, num_blocks, page, idx[idx >= 0])
    q = rng.standard_normal((b, s_q, h_q, 576)) * scale_q
    return q, cache, idx


def _dense_per_row(q, cache, idx, scale):
    """Independent route: dequantize the whole (unpoisoned) row set, one-hot weights by entry."""
    flat = cache.reshape(-1, 656)
    b, s_q, h_q, _ = q.shape
    out, lse = np.zeros((b, s_q, h_q, 512)), np.full((b, h_q, s_q), -np.inf)
    for i in range(b):
        for j in range(s_q):
            keys = [int(r) for r in idx[i, j] if r != -1]
            if not keys:
                continue
            kv = np.stack([unpack_fp8_row(flat[r]) for r in keys])  # [n, 576], duplicates repeated
            o, l = attention(q[i, j], kv, kv[:, :512], scale)
            out[i, j], lse[i, :, j] = o, l
    return out, lse


def test_sparse_decode_matches_attention_over_the_selected_rows():
    rng = np.random.default_rng(4)
    q, cache, idx = _case(rng)
    out, lse = S.sparse_decode(q, cache, idx, 0.05)
    want_out, want_lse = _dense_per_row(q, cache, idx, 0.05)
    np.testing.assert_allclose(out, want_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-12)
    assert np.isfinite(out).all(), "a poisoned row was read"


def test_sparse_over_every_token_equals_dense_decode_of_the_paged_cache():
    rng = np.random.default_rng(5)
    page, n = 16, 45
    lat, rope = rng.standard_normal((n, 512)), rng.standard_normal((n, 64))
    rows = unpack_fp8_row(pack_fp8_row(lat, rope))  # what the FP8 cache holds, dequantized
    table = np.array([[4, 0, 2]])
    cache = np.full((5, page, 1, 656), 0xFF, np.uint8)
    for j, blk in enumerate(table[0]):
        part = pack_fp8_row(lat[j * page:(j + 1) * page], rope[j * page:(j + 1) * page])
        cache[blk, :len(part), 0] = part
    pos = np.arange(n)[None, None, :]
    idx = S.physical_indices(pos, table, page)
    q = rng.standard_normal((1, 1, 4, 576))
    out, lse = S.sparse_decode(q, cache, idx, 576 ** -0.5)
    want_out, want_lse = attention(q[0, 0], rows, rows[:, :512], 576 ** -0.5)
    np.testing.assert_allclose(out[0, 0], want_out, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(lse[0, :, 0], want_lse, rtol=1e-12)


def test_order_does_not_matter_and_duplicates_count_twice():
    rng = np.random.default_rng(6)
    q, cache, idx = _case(rng, b=1, s_q=1, idx=np.array([3, 9, -1, 17, 9, 30]))
    out, lse = S.sparse_decode(q, cache, idx, 0.1)
    perm = idx[..., ::-1].copy()
    out2, lse2 = S.sparse_decode(q, cache, perm, 0.1)
    np.testing.assert_allclose(out2, out, rtol=1e-12, atol=1e-14)
    # row 9 listed twice = its weight doubled: lse grows by log(1 + p_9), and it differs
    # from listing it once
    once = idx.copy()
    once[0, 0, 4] = -1
    out1, lse1 = S.sparse_decode(q, cache, once, 0.1)
    assert not np.allclose(out1, out)
    flat = unpack_fp8_row(cache.reshape(-1, 656)[9])
    s9 = 0.1 * q[0, 0] @ flat  # [h_q]
    np.testing.assert_allclose(np.exp(lse[0, :, 0]), np.exp(lse1[0, :, 0]) + np.exp(s9), rtol=1e-12)


def test_all_invalid_row_gives_zeros_and_minus_inf():
    rng = np.random.default_rng(7)
    q, cache, idx = _case(rng, b=2, s_q=2)
    idx[1, 0] = -1
    out, lse = S.sparse_decode(q, cache, idx, 0.1)
    assert (out[1, 0] == 0).all() and (lse[1, :, 0] == -np.inf).all()
    assert np.isfinite(lse[0]).all() or (idx[0] == -1).all(axis=-1).any()


def test_scores_in_the_hundreds_per_row_stay_stable():
    """One query row's scores near +750 and another's near -750: each row needs its own max."""
    rng = np.random.default_rng(8)
    v = rng.standard_normal(576)
    rows = v + 0.01 * rng.standard_normal((5, 576))  # five similar keys
    cache = np.full((1, 8, 1, 656), 0xFF, np.uint8)
    cache[0, 1:6, 0] = pack_fp8_row(rows[:, :512], rows[:, 512:])
    kv = unpack_fp8_row(cache[0, 1:6, 0])  # [5, 576] what the cache holds
    q = rng.standard_normal((1, 2, 2, 576)) * 0.01
    q[0, 0, 0] = kv.mean(0) / (kv.mean(0) @ kv.mean(0)) * 750.0 / 0.1  # scores ~ +750
    q[0, 1, 1] = -q[0, 0, 0]  # scores ~ -750
    idx = np.broadcast_to(np.arange(1, 6), (1, 2, 5))
    out, lse = S.sparse_decode(q, cache, idx, 0.1)
    assert np.isfinite(out).all() and np.isfinite(lse).all()
    assert lse[0, 0, 0] > 700 and lse[0, 1, 1] < -700
    want_out, want_lse = _dense_per_row(q, cache, idx, 0.1)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-12)
    np.testing.assert_allclose(out, want_out, rtol=1e-9, atol=1e-9)


def test_sparse_decode_rejects_out_of_range_indices():
    rng = np.random.default_rng(9)
    q, cache, idx = _case(rng, num_blocks=2, page=8)
    idx[0, 1, 3] = 16
    with pytest.raises(ValueError, match="illegal address"):
        S.sparse_decode(q, cache, idx, 0.1)
    idx[0, 1, 3] = -2
    with pytest.raises(ValueError, match="neither -1"):
        S.sparse_decode(q, cache, idx, 0.1)


def test_random_fp8_cache_poisons_unused_rows():
    rng = np.random.default_rng(10)
    cache = S.random_fp8_cache(rng, 3, 4, [0, 5])
    vals = unpack_fp8_row(cache.reshape(-1, 656))
    assert np.isfinite(vals[[0, 5]]).all() and np.isnan(vals[[1, 2, 3, 4, 6]]).all(axis=1).all()


# ---- the arithmetic -------------------------------------------------------------------------

def test_v32_sparse_attention_and_indexer_counts():
    # 2 * 128 heads * 2048 keys * (576 + 512): the same work as dense decode at s_k = 2048
    assert S.sparse_attention_flops(128, 1, 2048) == 2 * 128 * 2048 * 1088 == 570_425_344
    assert S.sparse_attention_bytes(128, 1, 2048) == 2 * 128 * 576 + 2048 * 656 + 2 * 128 * 512
    assert S.indexer_flops(1) == 2 * 64 * 128 + 2 * 64 == 16_512
    assert S.indexer_bytes(1000, logits_round_trip=False) == 1000 * 132 + 64 * 128 + 4 * 64 + 4 * 2048
    assert S.indexer_bytes(1000) - S.indexer_bytes(1000, logits_round_trip=False) == 8 * 1000


def _first_principles_times(s_k, peak_bf16, peak_fp8, bw, h_q=128):
    """Dense and sparse step seconds from the raw counts (no mlacourse formulas)."""
    dense_f = 2 * h_q * s_k * 1088
    dense_b = 2 * h_q * 576 + 656 * s_k + 2 * h_q * 512
    k = min(s_k, 2048)
    att = max(2 * h_q * k * 1088 / peak_bf16, (2 * h_q * 576 + 656 * k + 2 * h_q * 512) / bw)
    idx = max(s_k * 16_512 / peak_fp8, (132 * s_k + 64 * 128 + 256 + 8 * s_k + 4 * 2048) / bw)
    return max(dense_f / peak_bf16, dense_b / bw), att + idx


@pytest.mark.parametrize("gpu", ["H800", "H200"])
def test_break_even_is_the_first_context_where_sparse_wins(gpu):
    g = GPUS[gpu]
    peaks = (g.bf16_tflops * 1e12, g.fp8_tflops * 1e12, g.hbm_gbps * 1e9)
    x = S.sparse_break_even(gpu)
    wins = [s for s in range(1, 8000) if (lambda d, sp: sp < d)(*_first_principles_times(s, *peaks))]
    assert wins and wins[0] == x and all(s in wins for s in range(x, 8000))
    assert 2048 < x < 4096


def test_break_even_numbers_and_the_published_equal_time_point():
    assert S.sparse_break_even("H800") == 2426
    assert S.sparse_break_even("H200") == 2299
    assert S.sparse_break_even("H800", h_q=16) == S.sparse_break_even("H200", h_q=16) == 2636  # bandwidth cancels
    assert S.published_equal_time_context() == pytest.approx(2048 * 640 / 410)
    assert 3000 < S.published_equal_time_context() < 3300


def test_sparse_step_is_constant_attention_plus_a_linear_indexer():
    a = S.sparse_step_seconds(65536, "H800")
    b = S.sparse_step_seconds(131072, "H800")
    assert a["attention"] == b["attention"]
    assert b["indexer"] == pytest.approx(2 * a["indexer"], rel=1e-3)
    ratio = S.dense_step_seconds(131072, "H800") / b["total"]
    assert 5 < ratio < 7  # the model's saving at 128K: attention per layer, not the whole model


def test_gather_sectors_and_overhead():
    assert S.sectors_read(np.arange(64)) == math.ceil(64 * 656 / 32)  # contiguous: nothing wasted
    assert S.sectors_read([0]) == 21 and S.sectors_read([1]) == 21  # 656 bytes from offset 0 or 16
    assert S.sectors_read([0, 1]) == 41  # neighbours share the sector at byte 640..671
    assert S.gather_overhead() == pytest.approx(672 / 656)
    assert S.gather_overhead(sector=64) == pytest.approx(704 / 656)
    rng = np.random.default_rng(11)
    rows = rng.choice(131072, size=2048, replace=False)  # a random top-k from a 128K context
    assert S.sectors_read(rows) * 32 / (2048 * 656) == pytest.approx(672 / 656, abs=2e-3)


def _first_principles_kernels(s_k, s_q, dense_rate, sparse_rate, bw, h_q=128, k=2048):
    """Dense and sparse ATTENTION kernel seconds (no indexer) from raw counts at given rates."""
    q_out = 2 * h_q * s_q * (576 + 512)
    dense = max(2 * h_q * s_q * s_k * 1088 / dense_rate, (q_out + 656 * s_k) / bw)
    kk = min(s_k, k)
    sparse = max(2 * h_q * s_q * kk * 1088 / sparse_rate, (q_out + 656 * s_q * kk) / bw)
    return dense, sparse


@pytest.mark.parametrize("s_q", [1, 2])
def test_like_for_like_break_even_is_the_top_k_at_equal_rates(s_q):
    """Kernel against kernel (no indexer), both at the bf16 peak: the sparse kernel does the
    dense kernel's work at s_k = topk and less beyond, and both are compute-bound there
    (656-byte rows: 425 FLOP/byte at s_q = 1 > the ridge 295), so sparse wins from topk + 1."""
    g = GPUS["H800"]
    first = next(s for s in range(2000, 2100)
                 if (lambda d, sp: sp < d)(*_first_principles_kernels(s, s_q, g.bf16_tflops * 1e12,
                                                                        g.bf16_tflops * 1e12, g.hbm_gbps * 1e9)))
    assert S.sparse_break_even("H800", s_q=s_q, indexer=False) == first == 2049


def test_break_even_at_the_blogs_s_q_and_at_published_rates():
    # the chapter's own model at s_q = 2 (FlashMLA's benchmark runs s_q = 2): earlier than at s_q = 1
    assert (S.sparse_break_even("H800", s_q=2), S.sparse_break_even("H200", s_q=2)) == (2242, 2180)
    # kernel against kernel at the published rates (640 dense, 410 sparse): the blog's "around 3000"
    g = GPUS["H800"]
    first = next(s for s in range(3000, 3400)
                 if (lambda d, sp: sp < d)(*_first_principles_kernels(s, 2, 640e12, 410e12, g.hbm_gbps * 1e9)))
    assert S.sparse_break_even("H800", s_q=2, indexer=False, dense_tflops=640, sparse_tflops=410) == first
    assert first == math.ceil(S.published_equal_time_context() + 1e-9) == 3197
    # and with the indexer counted too, later still
    assert S.sparse_break_even("H800", s_q=2, dense_tflops=640, sparse_tflops=410) > 3300
    with pytest.raises(ValueError, match="already wins"):
        S.sparse_break_even("H800", dense_tflops=100, sparse_tflops=900)
    with pytest.raises(ValueError, match="tflops"):
        S.roofline_seconds(1, 1, "H800", tflops=0)


def test_flashmla_cycle_arithmetic_and_the_crossover_ceiling():
    # the blog: 989 TFLOPS / 1830 MHz / 132 SMs = 4096 MMA FLOP per clock per SM (4096 is the
    # datasheet's 989.4 exactly)
    assert round(S.MMA_FLOP_PER_CLOCK_SM * 132 * 1.83e9 / 1e12, 1) == GPUS["H800"].bf16_tflops == 989.4
    assert S.mma_cycles_per_token() == 64 * (576 + 512) * 2 / 4096 == 34.0
    assert S.dequant_cycles_per_token() == pytest.approx((1 / 64 + 1 / 64 + 1 / 16 + 1 / 256) * 512) == 50.0
    assert S.dequant_cycles_per_token(ctas_sharing=2) == 25.0 < S.mma_cycles_per_token()
    assert S.tensor_busy_ceiling() == pytest.approx(34 / 50) and S.tensor_busy_ceiling(ctas_sharing=2) == 1.0
    with pytest.raises(ValueError):
        S.dequant_cycles_per_token(ctas_sharing=0)


def test_pair_intensity_mqa_against_mha():
    assert S.pair_intensity("absorb") == pytest.approx(2 * 128 * (576 + 512) / 1152)  # 241.8
    assert S.pair_intensity("absorb", row_bytes=656) == pytest.approx(2 * 128 * 1088 / 656)
    assert S.pair_intensity("expand") == pytest.approx(2 * 128 * (192 + 128) / (2 * 128 * 320)) == 1.0
    with pytest.raises(ValueError, match="path"):
        S.pair_intensity("both")


def test_hadamard_keeps_scores_and_spreads_an_outlier():
    h = S.hadamard(128)
    assert np.allclose(h @ h.T, np.eye(128))
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal(128), rng.standard_normal(128)
    k[5] = 40.0  # one outlier dimension
    assert np.isclose((h @ q) @ (h @ k), q @ k)
    crest = lambda v: np.abs(v).max() / np.sqrt(np.mean(v * v))  # noqa: E731
    assert crest(h @ k) < crest(k) / 2
    with pytest.raises(ValueError):
        S.hadamard(96)


def test_attn_sink_is_a_logit_with_a_zero_value():
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((4, 7))  # [h_q, keys]
    v = rng.standard_normal((7, 3))
    sink = np.array([0.5, -2.0, -np.inf, np.inf])
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    out = (p / p.sum(axis=1, keepdims=True)) @ v
    lse = np.log(np.exp(scores).sum(axis=1))
    with_sink = out * S.attn_sink_scale(lse, sink)[:, None]
    for h in range(2):  # the softmax over [scores, sink] with a zero value for the sink
        ext = np.exp(np.append(scores[h], sink[h]))
        assert np.allclose(with_sink[h], (ext[:-1] / ext.sum()) @ v)
    assert np.allclose(with_sink[2], out[2]) and np.all(with_sink[3] == 0)
    assert S.attn_sink_scale(-np.inf, 0.0) == 0.0 and S.attn_sink_scale(-np.inf, -np.inf) == 1.0
