"""mlacourse.prefill and the top-k bounds of mlacourse.flops: each figure against a computation
written another way here (loops over pairs, brute-force tile classes, exhaustive searches over
top-k choices, the layer's own expand path, FlashAttention's formula by hand)."""
import itertools
import math

import numpy as np
import pytest

from mlacourse import flops
from mlacourse import prefill as P
from mlacourse.attention import attention, causal_mask
from mlacourse.config import DEEPSEEK_V3 as V3
from mlacourse.config import TINY
from mlacourse.layer import attend_expand, expand_kv

V3S = V3.attention_shapes


# ---- the expand path's attention over ragged sequences ------------------------------------------

def test_visible_keys_is_the_bottom_right_mask():
    for n_q, n_k in [(1, 1), (3, 7), (7, 7), (5, 3), (0, 4), (4, 0)]:
        want = [int(sum(k <= n_k - n_q + j for k in range(n_k))) for j in range(n_q)]
        assert P.visible_keys(n_q, n_k).tolist() == want, (n_q, n_k)
        assert P.visible_keys(n_q, n_k, causal=False).tolist() == [n_k] * n_q
    assert P.visible_keys(3, 7).tolist() == causal_mask(3, 7).sum(axis=1).tolist()


def test_prefill_attention_equals_the_layers_expand_path_per_sequence():
    """Three sequences packed in one ragged batch, with NaN rows between their keys (seqused_k):
    each sequence's rows equal mlacourse.layer.attend_expand on that sequence alone."""
    rng = np.random.default_rng(0)
    cfg = TINY
    n_new, n_ctx = [2, 0, 5], [6, 3, 5]
    room = [n + 2 for n in n_ctx]  # two poisoned rows after each sequence's keys
    cu_q, cu_k = np.concatenate([[0], np.cumsum(n_new)]), np.concatenate([[0], np.cumsum(room)])
    q = rng.standard_normal((cu_q[-1], cfg.n_heads, cfg.d_qk))
    k = np.full((cu_k[-1], cfg.n_heads, cfg.d_qk), np.nan)
    v = np.full((cu_k[-1], cfg.n_heads, cfg.d_v), np.nan)
    w_uk = rng.standard_normal((cfg.n_heads, cfg.d_latent, cfg.d_nope))
    w_uv = rng.standard_normal((cfg.n_heads, cfg.d_latent, cfg.d_v))
    latents = []
    for i, n in enumerate(n_ctx):
        c, kr = rng.standard_normal((n, cfg.d_latent)), rng.standard_normal((n, cfg.d_rope))
        ki, vi = expand_kv(c, kr, w_uk, w_uv)  # [H, n, 192-ish], [H, n, d_v]
        k[cu_k[i]:cu_k[i] + n], v[cu_k[i]:cu_k[i] + n] = ki.transpose(1, 0, 2), vi.transpose(1, 0, 2)
        latents.append((c, kr))
    out, lse = P.prefill_attention(q, k, v, cu_q, cu_k, cfg.softmax_scale, True, seqused_k=n_ctx)
    assert np.isfinite(out).all() and np.isfinite(lse).all()
    for i, (c, kr) in enumerate(latents):
        qi = q[cu_q[i]:cu_q[i + 1]]
        want_o, want_l = attend_expand(qi[..., :cfg.d_nope], qi[..., cfg.d_nope:], c, kr, w_uk, w_uv,
                                       cfg.softmax_scale, causal_mask(n_new[i], n_ctx[i]))
        np.testing.assert_allclose(out[cu_q[i]:cu_q[i + 1]], want_o, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(lse[:, cu_q[i]:cu_q[i + 1]], want_l, rtol=1e-12, atol=1e-12)


def test_queries_without_keys_give_zero_and_minus_infinity():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((5, 2, 8)), rng.standard_normal((3, 2, 8)), rng.standard_normal((3, 2, 4))
    out, lse = P.prefill_attention(q, k, v, [0, 5], [0, 3], 0.3, causal=True)  # 5 queries, 3 keys
    assert np.all(out[:2] == 0) and np.all(np.isneginf(lse[:, :2]))  # queries 0 and 1 sit before every key
    want_o, want_l = attention(q[2:].transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2), 0.3,
                               causal_mask(3, 3))
    np.testing.assert_allclose(out[2:], want_o.transpose(1, 0, 2), rtol=1e-12)
    np.testing.assert_allclose(lse[:, 2:], want_l, rtol=1e-12)


def test_prefill_attention_refuses_what_names_no_rows():
    q, k, v = np.zeros((3, 1, 4)), np.zeros((3, 1, 4)), np.zeros((3, 1, 2))
    with pytest.raises(ValueError, match="start at 0"):
        P.prefill_attention(q, k, v, [1, 3], [0, 3], 1.0)
    with pytest.raises(ValueError, match="seqused_k"):
        P.prefill_attention(q, k, v, [0, 3], [0, 3], 1.0, seqused_k=[4])
    with pytest.raises(ValueError, match="past the rows"):
        P.prefill_attention(q, k, v, [0, 4], [0, 3], 1.0)


# ---- the tile schedule ------------------------------------------------------------------------------

def _brute_classes(n_q, n_k, bm, bn, causal):
    vis = np.arange(n_k)[None, :] < P.visible_keys(n_q, n_k, causal)[:, None]  # [n_q, n_k]
    out = np.zeros((-(-n_q // bm), -(-n_k // bn)), dtype=np.int64)
    for mb in range(out.shape[0]):
        for t in range(out.shape[1]):
            tile = vis[mb * bm:(mb + 1) * bm, t * bn:(t + 1) * bn]
            full = tile.all() and tile.shape == (min(bm, n_q - mb * bm), bn)
            out[mb, t] = P.FULL if full else (P.MASKED if tile.any() else P.SKIPPED)
    return out


@pytest.mark.parametrize("n_q,n_k", [(5, 12), (64, 64), (63, 65), (1, 1), (7, 3), (33, 100), (100, 100), (128, 200)])
@pytest.mark.parametrize("bm,bn", [(2, 4), (16, 16), (32, 16), (16, 64)])
def test_tile_classes_are_what_the_mask_says(n_q, n_k, bm, bn):
    """FULL: every (real query, key) entry of the tile is visible and every key exists; SKIPPED:
    none is; MASKED: the rest -- the rule version 2's two loop bounds encode."""
    for causal in (True, False):
        assert (P.tile_classes(n_q, n_k, bm, bn, causal) == _brute_classes(n_q, n_k, bm, bn, causal)).all()


def test_a_fresh_prompt_loads_about_half_the_tiles():
    c = P.tile_counts(8192, 8192, 128, 64)
    assert c["all"] == 64 * 128 and c["loaded"] == c["full"] + c["masked"]
    assert c["masked"] == 128  # two diagonal tiles per 128-row block
    assert c["loaded"] / c["all"] == pytest.approx(0.5 + 64 / 8192, abs=1e-12)
    assert c["pairs"] == 8192 * 8193 // 2 == flops.causal_pairs(8192, 8192)
    # an extend after a long prefix: almost everything is below the diagonal
    e = P.tile_counts(512, 8192 + 512, 128, 64)  # block j's last query sees 8192 + 128 (j + 1) keys
    assert e["kv_tiles"] == 136 and e["skipped"] == 6 + 4 + 2 + 0 and e["useful"] > 0.99


# ---- FLOPs and bytes ---------------------------------------------------------------------------------

def test_fa_flops_is_flashattentions_formula():
    # hopper/benchmark_attn.py: avg = (max(0, s_k - s_q) + s_k) / 2 under a causal mask
    assert P.fa_flops(2, 16, 8192, 8192, 192, 128) == 2 * 16 * 2 * 8192 * 4096 * 320
    assert P.fa_flops(1, 1, 100, 300, 192, 128) == 2 * 100 * 250 * 320
    assert P.fa_flops(1, 1, 100, 300, 192, 128, causal=False) == 2 * 100 * 300 * 320
    n = 4096  # it counts N^2/2 pairs where N(N+1)/2 are visible
    exact = P.varlen_flops([n], [n], 1, 192, 128, count="exact")
    assert exact == 2 * P.prefill_pairs(n, n) * 320 and exact / P.fa_flops(1, 1, n, n, 192, 128) == (n + 1) / n
    assert P.varlen_flops([3, 5], [10, 5], 4, 192, 128) == P.fa_flops(1, 4, 3, 10, 192, 128) + \
        P.fa_flops(1, 4, 5, 5, 192, 128)


def test_prefill_attention_bytes_and_where_it_turns_compute_bound():
    assert P.prefill_attention_bytes(10, 30, 2, 192, 128) == 2 * 2 * (10 * 192 + 30 * 320 + 10 * 128)
    n = P.ridge_sequence_length("H200")
    ridge = 989.4e12 / 4.8e12
    # intensity = H N^2 320 / (2 H N 640) = N / 4 for a fresh prompt
    assert n == math.ceil(4 * ridge) == 825


# ---- workspace ---------------------------------------------------------------------------------------

def test_expanded_bytes_and_the_whole_prefix_workspace():
    assert P.expanded_kv_bytes(1) == 128 * (192 + 128) * 2 == 81_920
    assert P.expanded_kv_bytes(1) / (576 * 2) == pytest.approx(71.1, abs=0.05)
    whole = P.whole_prefix_expansion_bytes(128 * 1024)
    assert whole == 10_737_418_240  # 10.7 GB for one layer
    assert whole > 128 * 1024 * 576 * 2 * V3.n_layers  # the sequence's whole bf16 latent cache, 61 layers: 9.2 GB
    ws = P.chunked_prefix_workspace(4096, 8192)
    assert ws["prefix K/V"] == 4096 * 81_920 == 320 * 2**20
    assert ws["new K/V"] == 8192 * 81_920 and ws["partials"] == 2 * 8192 * 128 * 129 * 4
    assert ws["total"] == sum(v for k, v in ws.items() if k != "total")
    # bounded whatever the prefix: the same for any prefix length
    assert P.chunked_prefix_workspace(4096, 8192) == ws


def test_context_chunks():
    assert P.context_chunks(4, 10_000, 4096, 64) == (1024, 10)
    assert P.context_chunks(3, 0, 4096, 64) == (1344, 0)  # 1365 rounded down to whole pages
    assert P.context_chunks(1, 5, 4096, 64) == (4096, 1)
    with pytest.raises(ValueError, match="less than one page"):
        P.context_chunks(100, 10, 4096, 64)


def test_vllms_context_budget():
    assert P.vllm_context_chunk_tokens(163_840, 256, 64) == 64 * 1024  # V3's 160K context: capped
    assert P.vllm_context_chunk_tokens(4096, 16, 64) == 8 * 4096
    assert P.vllm_context_chunk_tokens(1024, 256, 64, cap=128 * 1024) == 4 * 256 * 64
    # expanding the whole 64K-token budget at once: 5 GiB of K and V
    assert P.expanded_kv_bytes(64 * 1024) == 5 * 2**30


# ---- top-k: how many distinct tokens the expand path must up-project ------------------------------

def _max_and_min_union(n_new, n_ctx, topk):
    """Exhaustive: every way each new token can choose min(topk, v_i) of its visible tokens."""
    vis = P.visible_keys(n_new, n_ctx).tolist()
    choices = [list(itertools.combinations(range(v), min(topk, v))) for v in vis]
    sizes = [len(set().union(*pick)) for pick in itertools.product(*choices)]
    return min(sizes), max(sizes)


@pytest.mark.parametrize("n_new,n_ctx,topk", [(1, 4, 2), (2, 4, 2), (3, 5, 2), (2, 6, 3), (4, 4, 1), (3, 6, 1),
                                              (2, 3, 5), (3, 5, 3), (5, 6, 2)])
def test_distinct_bounds_are_the_exhaustive_extremes(n_new, n_ctx, topk):
    fewest, most = _max_and_min_union(n_new, n_ctx, topk)
    assert flops.distinct_selected_bounds(n_new, n_ctx, topk) == (fewest, most)
    assert most == min(n_ctx, flops.sparse_causal_pairs(n_new, n_ctx, topk))


def test_attention_flops_counts_both_bounds():
    n_new, n_ctx, k = 2048, 32768, 2048
    most = flops.attention_flops(n_new, n_ctx, topk=k, **V3S)
    assert most == flops.attention_flops(n_new, n_ctx, topk=k, distinct="most", **V3S)  # the default, unchanged
    fewest = flops.attention_flops(n_new, n_ctx, topk=k, distinct="fewest", **V3S)
    e = flops.expand_flops_per_cached_token(**{k_: V3S[k_] for k_ in ("n_heads", "d_nope", "d_v", "d_latent")})
    assert most["expand"] - fewest["expand"] == (32768 - 2048) * e
    assert most["absorb"] == fewest["absorb"]
    mid = flops.attention_flops(n_new, n_ctx, topk=k, distinct=10_000, **V3S)
    assert fewest["expand"] < mid["expand"] < most["expand"]
    for bad in (2047, 32769, "all", True):
        with pytest.raises(ValueError, match="distinct"):
            flops.attention_flops(n_new, n_ctx, topk=k, distinct=bad, **V3S)


# ---- which path -----------------------------------------------------------------------------------

def test_where_expand_wins_dense_prefill():
    assert P.expand_wins_from(32768) == 171 == math.ceil(flops.crossover_new_tokens(**V3S))
    assert P.expand_wins_from(1) == 1  # a one-token prompt: E = A, and expand's pair is cheaper
    for n_ctx in (1, 7, 100, 4096, 32768):  # a prompt without a prefix is always expanded
        assert flops.choose_path(n_ctx, n_ctx, **V3S) == "expand"


def test_where_expand_wins_with_topk():
    k = 2048
    frac = flops.sparse_expand_fraction(k, **V3S)
    assert 1 / frac == pytest.approx(13.0)
    fewest = P.expand_wins_from(32768, topk=k, distinct="fewest")
    assert fewest == math.ceil(k * frac) == 158  # whatever the context once it exceeds the chunk
    assert P.expand_wins_from(131072, topk=k, distinct="fewest") == 158
    most = P.expand_wins_from(32768, topk=k)
    assert most == 2521 and abs(most - 32768 / 13) < 1  # the chunk must be ~1/13 of its context


@pytest.mark.parametrize("n_ctx,topk,distinct", [(300, None, "most"), (5000, None, "most"), (5000, 512, "most"),
                                                 (5000, 512, "fewest"), (600, 64, "most")])
def test_expands_advantage_grows_with_the_chunk(n_ctx, topk, distinct):
    """expand_wins_from bisects: it needs choose_path to flip once, from absorb to expand."""
    paths = [flops.choose_path(n, n_ctx, topk=topk, distinct=distinct, **V3S) for n in range(1, n_ctx + 1)]
    first = paths.index("expand")
    assert all(p == "expand" for p in paths[first:]) and first + 1 == P.expand_wins_from(n_ctx, topk=topk,
                                                                                         distinct=distinct)


def test_bytes_per_selected_key():
    from mlacourse.sparse import pair_intensity
    assert flops.expand_flops_per_pair(**{k: V3S[k] for k in ("n_heads", "d_nope", "d_rope", "d_v")}) \
        / P.bytes_per_selected_key("expand") == pair_intensity("expand") == 1.0  # chapter 8's figure, same count
    assert flops.absorb_flops_per_pair(**{k: V3S[k] for k in ("n_heads", "d_rope", "d_latent")}) \
        / P.bytes_per_selected_key("absorb", kv_row_bytes=1152) == pair_intensity("absorb")
    assert P.bytes_per_selected_key("expand") == 81_920
    assert P.bytes_per_selected_key("absorb") == 656
    assert P.bytes_per_selected_key("absorb", kv_row_bytes=1152) == 1152
    assert P.bytes_per_selected_key("expand") // P.bytes_per_selected_key("absorb") == 124


def test_prefill_costs_and_roofline():
    dense = P.prefill_costs(8192, 8192)
    f = flops.attention_flops(8192, 8192, **V3S)
    assert dense["expand"]["flops"] == f["expand"] and dense["absorb"]["flops"] == f["absorb"]
    e = 2
    assert dense["expand"]["bytes"] == 8192 * 1152 + 2 * P.expanded_kv_bytes(8192) + e * 8192 * 128 * 320
    assert dense["absorb"]["bytes"] == 8192 * 1152 + e * 8192 * 128 * (576 + 512)
    r = P.prefill_roofline(8192, 8192, "H200")
    assert r["expand"]["bound"] == "compute" and r["absorb"]["bound"] == "compute"
    assert r["expand"]["seconds"] < r["absorb"]["seconds"]  # dense prefill: expand
    # top-k 2048 after a 32K prefix: the gathered per-head K/V make expand memory-bound
    s = P.prefill_roofline(2048, 34816, "H200", topk=2048)
    assert s["expand"]["bound"] == "memory" and s["absorb"]["bound"] == "compute"
    assert s["absorb"]["seconds"] < s["expand"]["seconds"]
    c = P.prefill_costs(2048, 34816, topk=2048, distinct="fewest")
    assert c["expanded"] == 2048 and c["pairs"] == 2048 * 2048
    assert c["expand"]["bytes"] > c["pairs"] * 81_920
    # every query choosing inside one set of 2,048, each read once: expand's FLOPs are a third of
    # absorb's and its bytes no longer per pair -- both compute-bound, and expand is the faster
    once = P.prefill_roofline(2048, 34816, "H200", topk=2048, distinct="fewest", reads="once")
    assert once["expand"]["bound"] == "compute" and once["expand"]["seconds"] < once["absorb"]["seconds"]
    few = P.prefill_costs(2048, 34816, topk=2048, distinct="fewest", reads="once")
    assert few["expand"]["bytes"] == 2048 * 1152 + 2 * P.expanded_kv_bytes(2048) + 2 * 2048 * 128 * 320
    assert few["absorb"]["bytes"] == 2048 * 1152 + 2 * 2048 * 128 * (576 + 512)
    assert few["expand"]["flops"] * 3 == few["absorb"]["flops"]
    with pytest.raises(ValueError, match="reads must be"):
        P.prefill_costs(8, 16, topk=4, reads="some")


# ---- sparse prefill ---------------------------------------------------------------------------------

def test_sparse_prefill_matches_dense_attention_over_the_chosen_rows():
    rng = np.random.default_rng(2)
    s_kv, s_q, h, d = 20, 4, 3, 12
    q, kv = rng.standard_normal((s_q, h, d)), rng.standard_normal((s_kv, 1, d))
    kv[7] = np.nan  # a row nobody names
    idx = np.array([[[0, 5, -1, 19]], [[3, 3, 20, 21]], [[-1, -1, -1, 40]], [[2, -5, 1, 0]]])
    out, lse = P.sparse_prefill(q, kv, idx, 0.25, d_v=8)
    assert np.all(out[2] == 0) and np.all(np.isneginf(lse[2]))  # no valid index: 0 and -inf
    for t, keys in [(0, [0, 5, 19]), (1, [3, 3]), (3, [2, 1, 0])]:  # duplicates count twice; -5, >= s_kv: none
        o, l_ = attention(q[t][:, None], kv[keys, 0][None], kv[keys, 0, :8][None], 0.25)
        np.testing.assert_allclose(out[t], o[:, 0], rtol=1e-12)
        np.testing.assert_allclose(lse[t], l_[:, 0], rtol=1e-12)
