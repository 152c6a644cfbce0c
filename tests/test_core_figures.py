"""Every figure the foundation chapters quote, recomputed from the core.

Each expected value is written as the formula it comes from (or as the number the
published sources give, with its rounding), never copied out of mlacourse."""
import math

import pytest

from mlacourse import cache, flops, hardware
from mlacourse.config import DEEPSEEK_V2, DEEPSEEK_V3

pytestmark = pytest.mark.smoke   # in the default run (tests/conftest.py)

V3 = dict(n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512)


# ---- chapter 1: the KV cache -------------------------------------------------

def test_v2_mha_equivalent_cache_per_token():
    per_layer = cache.per_token_elements(DEEPSEEK_V2, "mha")
    assert per_layer * DEEPSEEK_V2.n_layers == 2 * 128 * 128 * 60 == 1_966_080


def test_mla_caches_576_per_token_per_layer():
    assert cache.per_token_elements(DEEPSEEK_V3, "mla") == 512 + 64 == 576


def test_mla_is_about_57x_smaller_than_mha_per_layer():
    ratio = cache.mha_elements(128, 128) / cache.mla_elements(512, 64)
    assert ratio == pytest.approx(32768 / 576) and round(ratio, 1) == 56.9


def test_v3_bytes_per_token_bf16():
    assert cache.cache_bytes(576, n_layers=61, dtype="bf16") == 576 * 61 * 2 == 70_272


def test_naive_expanded_cache_elements():
    assert cache.per_token_elements(DEEPSEEK_V3, "mla_expanded") == 128 * (192 + 128) == 40_960


def test_gqa_mqa_formulas():
    assert cache.gqa_elements(8, 128) == 2 * 8 * 128
    assert cache.mqa_elements(128) == 2 * 128
    # MLA's 9/2 * d_h equals GQA with 2.25 groups (the V2 paper's comparison)
    assert cache.mla_elements(512, 64) / (2 * 128) == 2.25


def test_v2_totals_at_long_context():
    mha_32k = cache.cache_bytes(2 * 128 * 128, n_layers=60, n_tokens=32768)
    mla_128k = cache.cache_bytes(576, n_layers=60, n_tokens=131072)
    assert mha_32k == 32768 * 32768 * 60 * 2  # ~128.8 GB
    assert round(mla_128k / 1e9, 1) == 9.1


def test_fp8_row_is_656_bytes():
    assert cache.fp8_mla_row_bytes(512, 64) == 512 * 1 + 4 * 4 + 64 * 2 == 656


def test_unknown_dtype_and_kind_are_clear_errors():
    with pytest.raises(ValueError, match="unknown dtype"):
        cache.cache_bytes(576, dtype="int3")
    with pytest.raises(ValueError, match="unknown kind"):
        cache.per_token_elements(DEEPSEEK_V3, "mlq")


# ---- chapter 2: the softmax scale ----------------------------------------------

def test_softmax_scale_is_one_over_sqrt_192():
    assert DEEPSEEK_V3.softmax_scale == 1 / math.sqrt(128 + 64)


# ---- chapter 4: FLOPs and path choice -------------------------------------------

def test_pair_costs_and_ratio():
    e = flops.expand_flops_per_pair(128, 128, 64, 128)
    a = flops.absorb_flops_per_pair(128, 64, 512)
    assert e == 128 * (192 + 128) * 2 == 81_920
    assert a == 128 * (576 + 512) * 2 == 278_528
    assert round(a / e, 1) == 3.4


def test_expand_one_token_equals_absorb_one_token_for_v3():
    assert flops.expand_flops_per_cached_token(128, 128, 128, 512) == 2 * 512 * 128 * 256
    assert flops.absorb_flops_per_new_token(128, 128, 128, 512) == 2 * 512 * 128 * 256
    assert round(2 * 512 * 128 * 256 / 1e6, 1) == 33.6


@pytest.mark.parametrize("n_new,n_ctx,gexpand,gabsorb,path", [
    # the seed's table (GFLOPs rounded to 0.1)
    (1, 8192, 275.5, 2.3, "absorb"),
    (8192, 8192, 3024.0, 9621.9, "expand"),
    (64, 32768 + 64, 1273.6, 586.8, "absorb"),
    (512, 32768 + 512, 2501.8, 4726.7, "expand"),
])
def test_seed_path_table(n_new, n_ctx, gexpand, gabsorb, path):
    f = flops.attention_flops(n_new, n_ctx, **V3)
    assert round(f["expand"] / 1e9, 1) == gexpand
    assert round(f["absorb"] / 1e9, 1) == gabsorb
    assert flops.choose_path(n_new, n_ctx, **V3) == path


def test_attention_flops_formula_by_hand():
    n_new, n_ctx = 37, 1000
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2
    e = n_ctx * 2 * 512 * 128 * (128 + 128) + pairs * (2 * 128 * (128 + 64) + 2 * 128 * 128)
    a = n_new * (2 * 128 * 128 * 512 + 2 * 128 * 512 * 128) + pairs * (2 * 128 * (512 + 64) + 2 * 128 * 512)
    assert flops.attention_flops(n_new, n_ctx, **V3) == {"expand": e, "absorb": a}


def test_crossover_is_512_over_3():
    assert flops.crossover_new_tokens(**V3) == pytest.approx(512 / 3)
    assert round(flops.crossover_new_tokens(**V3)) == 171


def test_choice_flips_near_crossover_for_long_prefix():
    prefix = 10**7  # n_ctx >> n_new: the asymptotic crossover applies
    assert flops.choose_path(170, prefix + 170, **V3) == "absorb"
    assert flops.choose_path(172, prefix + 172, **V3) == "expand"


def test_tie_goes_to_absorb():
    shapes = dict(n_heads=4, d_nope=128, d_rope=64, d_v=128, d_latent=128)
    f = flops.attention_flops(50, 50, **shapes)
    assert f["expand"] == f["absorb"]
    assert flops.choose_path(50, 50, **shapes) == "absorb"


def test_bad_token_counts_are_clear_errors():
    with pytest.raises(ValueError, match="n_new"):
        flops.attention_flops(10, 5)
    with pytest.raises(ValueError, match="n_new"):
        flops.attention_flops(0, 5)


# ---- chapter 5: roofline ---------------------------------------------------------

def test_mla_decode_intensity_about_242():
    assert flops.decode_intensity_mla() == pytest.approx(2 * 128 * (576 + 512) / (576 * 2))
    assert round(flops.decode_intensity_mla()) == 242


def test_gqa_and_mha_decode_intensity():
    # 64 q heads share 8 KV heads of dim 128: 2*64*(128+128) FLOPs per 8*2*128*2 bytes
    assert flops.decode_intensity_gqa(64, 8, 128) == 2 * 64 * 256 / (8 * 2 * 128 * 2) == 8
    assert flops.decode_intensity_gqa(128, 128, 128) == 1


def test_fp8_intensity():
    assert round(flops.decode_intensity_mla(kv_row_bytes=576)) == 484
    assert flops.decode_intensity_mla(kv_row_bytes=656) == pytest.approx(278_528 / 656)


def test_exact_decode_bytes_and_approximation():
    h, s_q, s_k = 128, 1, 8192
    exact = flops.decode_flops(h, s_q, s_k, 576, 512) / flops.decode_bytes(h, s_q, s_k, 576, 512)
    by_hand = (2 * h * s_q * s_k * 1088) / (2 * (h * s_q * 576 + s_k * 576 + h * s_q * 512))
    assert exact == pytest.approx(by_hand)
    assert exact < flops.decode_intensity_mla() < flops.intensity_approx_2hs(h, s_q)


@pytest.mark.parametrize("name,ridge", [("H800", 295), ("H200", 206), ("H100", 295), ("A100", 153)])
def test_ridge_points(name, ridge):
    g = hardware.GPUS[name]
    assert g.ridge() == pytest.approx(g.bf16_tflops * 1e12 / (g.hbm_gbps * 1e9))
    assert round(g.ridge()) == ridge


def test_every_gpu_has_a_source_and_a_100_has_no_fp8():
    assert all(g.source for g in hardware.GPUS.values())
    with pytest.raises(ValueError, match="no fp8"):
        hardware.GPUS["A100"].ridge("fp8")


def test_attainable_is_min_of_roofs():
    g = hardware.GPUS["H800"]
    assert g.attainable_tflops(1.0) == pytest.approx(3.35)
    assert g.attainable_tflops(1e6) == g.bf16_tflops
