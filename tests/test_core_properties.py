"""Property tests: the two MLA paths agree; chunked / split attention equals one-shot;
RoPE is a relative-position rotation; the FP8 row round-trips."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlacourse import attention, fp8, layer, paged, rope
from mlacourse.config import TINY, MLAConfig

SETTINGS = settings(max_examples=40, deadline=None)


def random_cache_and_queries(rng, h, d_latent, d_nope, d_rope, d_v, s, t):
    return dict(
        q_nope=rng.standard_normal((s, h, d_nope)),
        q_rope=rng.standard_normal((s, h, d_rope)),
        c_kv=rng.standard_normal((t, d_latent)),
        k_rope=rng.standard_normal((t, d_rope)),
        w_uk=rng.standard_normal((h, d_latent, d_nope)) / np.sqrt(d_latent),
        w_uv=rng.standard_normal((h, d_latent, d_v)) / np.sqrt(d_latent),
    )


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), h=st.integers(1, 4), d_latent=st.integers(1, 12),
       d_nope=st.integers(1, 8), half_rope=st.integers(1, 4), d_v=st.integers(1, 8),
       s=st.integers(1, 6), extra=st.integers(0, 8))
def test_expand_equals_absorb(seed, h, d_latent, d_nope, half_rope, d_v, s, extra):
    rng = np.random.default_rng(seed)
    t = s + extra
    args = random_cache_and_queries(rng, h, d_latent, d_nope, 2 * half_rope, d_v, s, t)
    mask = attention.causal_mask(s, t)
    o1, l1 = layer.attend_expand(**args, scale=0.3, mask=mask)
    o2, l2 = layer.attend_absorb(**args, scale=0.3, mask=mask)
    assert o1.shape == (s, h, d_v) and l1.shape == (h, s)
    np.testing.assert_allclose(o1, o2, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(l1, l2, rtol=1e-9, atol=1e-10)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), s=st.integers(1, 5), prefix=st.integers(0, 20),
       chunk=st.integers(1, 7))
def test_chunked_prefix_equals_one_shot(seed, s, prefix, chunk):
    rng = np.random.default_rng(seed)
    t = s + prefix
    args = random_cache_and_queries(rng, 3, 6, 4, 4, 5, s, t)
    o1, l1 = layer.attend_expand(**args, scale=0.5, mask=attention.causal_mask(s, t))
    o2, l2 = layer.attend_chunked_prefix(**args, scale=0.5, chunk=chunk)
    np.testing.assert_allclose(o1, o2, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(l1, l2, rtol=1e-9, atol=1e-11)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), t=st.integers(0, 40), n_splits=st.integers(1, 9))
def test_split_kv_equals_one_shot_including_empty_splits(seed, t, n_splits):
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((3, 1, 7)), rng.standard_normal((3, t, 7)), rng.standard_normal((3, t, 5))
    o1, l1 = attention.attention(q, k, v, 0.4)
    o2, l2 = attention.split_kv_attention(q, k, v, 0.4, n_splits)
    np.testing.assert_allclose(o1, o2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(l1, l2, rtol=1e-9, atol=1e-12)


def test_rows_with_no_visible_key_give_zero_and_minus_inf():
    q, k, v = np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 2))
    mask = np.array([[False] * 4, [True, False, False, False]])
    out, lse = attention.attention(q, k, v, 1.0, mask)
    assert np.all(out[0] == 0) and lse[0] == -np.inf
    assert np.isfinite(lse[1]) and np.allclose(out[1], 1.0)


def test_attention_is_stable_for_huge_scores():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((2, 8)) * 100, rng.standard_normal((5, 8)) * 100, rng.standard_normal((5, 3))
    out, lse = attention.attention(q, k, v, 1.0)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(lse))
    s = q @ k.T
    np.testing.assert_allclose(lse, s.max(1) + np.log(np.exp(s - s.max(1, keepdims=True)).sum(1)))


def test_causal_mask_is_bottom_right_aligned():
    m = attention.causal_mask(2, 5)
    assert m.tolist() == [[True, True, True, True, False], [True] * 5]
    np.testing.assert_array_equal(attention.causal_mask(4, 4), np.tril(np.ones((4, 4), bool)))
    with pytest.raises(ValueError):
        attention.causal_mask(3, 2)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(0, 5000), n=st.integers(0, 5000))
def test_rope_scores_depend_only_on_relative_position(seed, m, n):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal(8), rng.standard_normal(8)
    shift = 123
    a = rope.apply_rope(q, m) @ rope.apply_rope(k, n)
    b = rope.apply_rope(q, m + shift) @ rope.apply_rope(k, n + shift)
    assert a == pytest.approx(b, rel=1e-7, abs=1e-7)


def test_rope_matrix_matches_apply_and_pairs_are_interleaved():
    x = np.arange(1.0, 7.0)
    np.testing.assert_allclose(rope.rotation_matrix(5, 6) @ x, rope.apply_rope(x, 5))
    # position 0 is the identity; pair (0, 1) rotates by exactly `position` radians
    np.testing.assert_allclose(rope.apply_rope(x, 0), x)
    y = rope.apply_rope(np.array([1.0, 0.0, 0, 0]), 1.0)
    np.testing.assert_allclose(y[:2], [np.cos(1.0), np.sin(1.0)])


@pytest.mark.parametrize("path", ["expand", "absorb"])
def test_decode_after_prefill_equals_full_prefill(path):
    """Appending tokens one at a time through the cache gives the same outputs as one
    causal prefill over all of them (the cache carries everything needed)."""
    rng = np.random.default_rng(7)
    w = layer.init_weights(TINY, rng)
    h = rng.standard_normal((6, TINY.d_model))
    y_all, _ = layer.mla_forward(TINY, w, h, path="expand")
    y_pre, cache = layer.mla_forward(TINY, w, h[:3], path=path)
    rows = [y_pre]
    for i in range(3, 6):
        y, cache = layer.mla_forward(TINY, w, h[i:i + 1], cache, path=path)
        rows.append(y)
    assert len(cache) == 6 and cache.c_kv.shape == (6, TINY.d_latent)
    np.testing.assert_allclose(np.concatenate(rows), y_all, rtol=1e-10, atol=1e-12)


def test_paths_agree_on_v3_shapes_in_float32():
    cfg = MLAConfig("v3-attn", n_heads=128, n_layers=1, d_model=256, q_lora_rank=64,
                    d_latent=512, d_nope=128, d_rope=64, d_v=128)
    rng = np.random.default_rng(3)
    args = {k: v.astype(np.float32) for k, v in
            random_cache_and_queries(rng, 128, 512, 128, 64, 128, 4, 40).items()}
    mask = attention.causal_mask(4, 40)
    o1, _ = layer.attend_expand(**args, scale=cfg.softmax_scale, mask=mask)
    o2, _ = layer.attend_absorb(**args, scale=cfg.softmax_scale, mask=mask)
    assert o1.dtype == np.float32
    np.testing.assert_allclose(o1, o2, rtol=1e-3, atol=1e-4)


def test_paged_gather_reads_only_valid_rows():
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, 1, 6)) for n in (0, 1, 15, 16, 17, 40)]
    kv, table, lens = paged.make_paged_cache(seqs, 16, rng)
    assert np.isnan(kv).any() and (table == 2**31 - 1).any()  # the poison is really there
    for i, s in enumerate(seqs):
        got = paged.gather_paged(kv, table, lens, i)
        np.testing.assert_array_equal(got, s)


def test_e4m3_table_and_rounding():
    assert fp8.E4M3_VALUES[0x7E] == 448.0 and np.isnan(fp8.E4M3_VALUES[0x7F])
    assert fp8.E4M3_VALUES[0x01] == 2.0 ** -9  # smallest subnormal
    assert fp8.E4M3_VALUES[0x38] == 1.0  # exponent bias 7
    finite = fp8.E4M3_VALUES[np.isfinite(fp8.E4M3_VALUES)]
    codes = fp8.e4m3_encode(finite)
    np.testing.assert_array_equal(fp8.e4m3_decode(codes), finite)  # exact values round-trip
    # halfway between 1.0 and 1.125 goes to the even code (1.0); saturate above 448
    np.testing.assert_array_equal(fp8.e4m3_decode(fp8.e4m3_encode([1.0625, 1000.0, -1000.0])),
                                  [1.0, 448.0, -448.0])


def test_bf16_round_to_nearest_even():
    x = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.5], dtype=np.float32)
    np.testing.assert_array_equal(fp8.bf16_decode(fp8.bf16_encode(x)), [1.0, 1.0, 1.0 + 2**-6, -2.5])


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), mag=st.floats(1e-3, 1e3))
def test_fp8_row_round_trip(seed, mag):
    rng = np.random.default_rng(seed)
    latent, rope_part = rng.standard_normal((3, 512)) * mag, rng.standard_normal((3, 64))
    row = fp8.pack_fp8_row(latent, rope_part)
    assert row.shape == (3, 656) and row.dtype == np.uint8
    back = fp8.unpack_fp8_row(row)
    # e4m3 keeps 3 mantissa bits: relative error <= 2^-4 of each tile's max for the
    # largest values, and bf16 keeps 8 bits for the rope part
    tile_max = np.abs(latent.reshape(3, 4, 128)).max(-1, keepdims=True)
    err = np.abs(back[:, :512] - latent).reshape(3, 4, 128)
    assert np.all(err <= tile_max * 2.0**-4 + 1e-300)
    np.testing.assert_allclose(back[:, 512:], rope_part, rtol=2.0**-8)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), prefix=st.integers(0, 12), n_new=st.integers(1, 5),
       heads=st.integers(1, 3), half_rope=st.integers(1, 3))
def test_layer_paths_agree_at_random_positions(seed, prefix, n_new, heads, half_rope):
    """Whole layer with RoPE at real positions: a random prefix in the cache, then n_new
    new tokens at positions prefix .. prefix+n_new-1, through both paths."""
    cfg = MLAConfig("rand", n_heads=heads, n_layers=1, d_model=24, q_lora_rank=12,
                    d_latent=10, d_nope=6, d_rope=2 * half_rope, d_v=5)
    rng = np.random.default_rng(seed)
    w = layer.init_weights(cfg, rng)
    h = rng.standard_normal((prefix + n_new, cfg.d_model))
    _, cache = layer.mla_forward(cfg, w, h[:prefix], path="absorb")
    y_e, cache_e = layer.mla_forward(cfg, w, h[prefix:], cache, path="expand")
    y_a, cache_a = layer.mla_forward(cfg, w, h[prefix:], cache, path="absorb")
    np.testing.assert_allclose(y_e, y_a, rtol=1e-9, atol=1e-11)
    np.testing.assert_array_equal(cache_e.k_rope, cache_a.k_rope)  # both cache the same rows
    assert len(cache_a) == prefix + n_new
