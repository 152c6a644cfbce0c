"""kernels.fp8 (torch) and mlacourse.fp8 (numpy): FlashMLA's two FP8 cache layouts (V3.2's
656-byte row, MODEL1_FP8Sparse's 584 bytes per token) and two scale rules (power-of-two, the
default; max|x|/448), two implementations held to byte-for-byte agreement."""
import numpy as np
import pytest
import torch

from kernels import fp8 as kfp8
from mlacourse import fp8 as npfp8


def _rows(rng, n):
    latent = rng.standard_normal((n, 512)) * rng.choice([1e-3, 1.0, 50.0], size=(n, 1))
    latent[0, :128] = 0.0  # an all-zero tile: scale 1.0
    latent[1, 5] = -0.0
    latent[2, 300] = 1e-9  # rounds to code 0 (not -0)
    latent[2, 301] = -1e-9
    rope = rng.standard_normal((n, 64)) * 3
    return latent, rope


@pytest.mark.parametrize("scales", ["pow2", "amax"])
def test_pack_matches_mlacourse_byte_for_byte(scales):
    rng = np.random.default_rng(0)
    latent, rope = _rows(rng, 64)
    latent[3, :128] *= 1e-6  # a tile under FlashMLA's floor: scale 2^-13, subnormal codes
    latent[4, 128:256] = 448.0 * 2.0 ** -5 * np.sign(latent[4, 128:256])  # max|x| exactly 448 * 2^-5
    want = npfp8.pack_fp8_row(latent, rope, scales)  # uint8 [64, 656]
    got = kfp8.pack_fp8_rows(torch.from_numpy(latent), torch.from_numpy(rope), scales).numpy()
    assert got.shape == want.shape == (64, 656)
    diff = np.argwhere(got != want)
    assert diff.size == 0, f"{len(diff)} bytes differ, first at (row, byte) {tuple(diff[0])}: " \
                           f"torch {got[tuple(diff[0])]} vs numpy {want[tuple(diff[0])]}"


def test_pack_rounds_ties_once():
    # values exactly halfway between two e4m3 codes, and a hair above: float32 would round
    # the second to the tie and then to even (double rounding); both packers must round up
    lat = np.zeros((1, 512))
    lat[0, 0] = 448.0  # fixes the tile's scale at 1.0
    lat[0, 1] = 1.0625  # halfway between 1.0 and 1.125: ties to even -> 1.0
    lat[0, 2] = 1.0625 + 2.0 ** -40  # just above the tie -> 1.125
    rope = np.zeros((1, 64))
    want = npfp8.pack_fp8_row(lat, rope)  # pow2: max 448 -> scale 1.0 as well
    got = kfp8.pack_fp8_rows(torch.from_numpy(lat), torch.from_numpy(rope)).numpy()
    assert np.array_equal(got, want)
    vals = npfp8.unpack_fp8_row(got)[0]
    assert vals[1] == 1.0 and vals[2] == 1.125, vals[:3]


def test_unpack_matches_mlacourse():
    rng = np.random.default_rng(1)
    rows = npfp8.pack_fp8_row(*_rows(rng, 16))
    want = npfp8.unpack_fp8_row(rows)
    got = kfp8.unpack_fp8_rows(torch.from_numpy(rows)).double().numpy()
    # torch multiplies code * scale in float32, numpy in float64: one float32 rounding apart
    np.testing.assert_allclose(got, want, rtol=2.0 ** -24, atol=0)
    assert not np.array_equal(got[:, :512], np.zeros_like(got[:, :512]))


def test_pack_cache_layout():
    kv = torch.randn(3, 16, 1, 576)
    packed = kfp8.pack_fp8_kvcache(kv)
    assert packed.shape == (3, 16, 1, 656) and packed.dtype == torch.uint8
    back = kfp8.unpack_fp8_rows(packed)
    err = (back - kv).abs().max() / kv.abs().max()
    assert err < 2 ** -3, f"relative dequantization error {err:.3g} above e4m3's half step"


# ---- the scale rules -------------------------------------------------------------------------

def test_pow2_scales_are_flashmlas_rule():
    """2 ** ceil(log2(max(max|x| / 448, 1e-4))) (FlashMLA tests/quant.py _cast_scale_inv_to_ue8m0),
    in numpy exactly and in torch by FlashMLA's formula, on the boundaries where they could differ."""
    k = np.arange(-20, 40)
    amax = np.concatenate([448.0 * 2.0 ** k, 448.0 * 2.0 ** k * (1 + 2.0 ** -20), [0.0, 1e-9, 0.0448, 0.0449]])
    s = npfp8.tile_scales(amax, "pow2").astype(np.float64)
    m, _ = np.frexp(s)
    assert np.all(m == 0.5), "every scale a power of two"
    want = np.maximum(2.0 ** np.ceil(np.log2(np.maximum(amax / 448.0, 1e-4))), 2.0 ** -13)
    np.testing.assert_array_equal(s, want)
    at0 = int(np.flatnonzero(k == 0)[0])
    assert s[at0] == 1.0 and s[k.size + at0] == 2.0  # max|x| = 448 exactly: scale 1; a hair above: 2
    assert s[-4] == s[-3] == s[-2] == 2.0 ** -13 and s[-1] == 2.0 ** -13  # the floor: 1e-4 rounds up to 2^-13
    assert np.all((448.0 * s >= amax) & ((448.0 * s / 2 < amax) | (s == 2.0 ** -13)))
    np.testing.assert_array_equal(kfp8.tile_scales(torch.from_numpy(amax), "pow2").double().numpy(), s)
    assert np.isnan(npfp8.tile_scales([np.nan])[0]) and torch.isnan(kfp8.tile_scales(torch.tensor([float("nan")])))[0]
    with pytest.raises(ValueError, match="scales must be one of"):
        npfp8.tile_scales([1.0], "ue8m0")


def test_pow2_dequantization_is_exact_in_bf16_and_amax_is_not():
    """Why FlashMLA moved to power-of-two scales: code * 2^k is a bf16 value (a kernel that
    dequantizes to bf16 rounds nothing); code * (max|x| / 448) mostly is not."""
    rng = np.random.default_rng(5)
    latent, rope = rng.standard_normal((32, 512)) * 3, rng.standard_normal((32, 64))
    for scales, exact_share in (("pow2", 1.0), ("amax", 0.1)):
        vals = npfp8.unpack_fp8_row(npfp8.pack_fp8_row(latent, rope, scales))[:, :512]
        as_bf16 = npfp8.bf16_decode(npfp8.bf16_encode(vals)).astype(np.float64)
        share = float(np.mean(as_bf16 == vals))
        assert (share == 1.0) if scales == "pow2" else (share < exact_share), (scales, share)


# ---- MODEL1_FP8Sparse ---------------------------------------------------------------------------

def test_model1_figures():
    """FlashMLA's figures for MODEL1 (tests/quant.py get_meta: d 512, nope 448, rope 64, tiles of 64,
    7 tiles; bytes per token 448 + 2*64 + 7 + 1; csrc/api/sparse_decode.h the same sum)."""
    assert (npfp8.MODEL1_NOPE, npfp8.MODEL1_ROPE, npfp8.MODEL1_TILE, npfp8.MODEL1_TILES) == (448, 64, 64, 7)
    assert npfp8.MODEL1_TOKEN_BYTES == 584 == 448 + 2 * 64 + 7 + 1
    for p in (1, 2, 61, 64, 256):
        n = npfp8.model1_page_bytes(p)
        assert n % 576 == 0 and n >= 584 * p and n - 576 < 584 * p, (p, n)
    assert npfp8.model1_page_bytes(64) == 37440  # 64 * 584 = 37376, rounded up to 65 * 576


def _model1_kv(rng, n=3, p=5):
    kv = rng.standard_normal((n, p, 512)) * rng.choice([1e-3, 1.0, 30.0], size=(n, p, 1))
    kv[0, 0, :64] = 0.0  # an all-zero tile
    return kv


def test_model1_layout_and_round_trip():
    rng = np.random.default_rng(7)
    kv = _model1_kv(rng)
    pages = npfp8.pack_model1_pages(kv)  # uint8 [3, 3456]
    p = 5
    assert pages.shape == (3, npfp8.model1_page_bytes(p))
    t = 3  # token 3 of page 1, read off by hand
    data = pages[1, 576 * t:576 * t + 576]
    scale_codes = pages[1, 576 * p + 8 * t:576 * p + 8 * t + 8]
    assert scale_codes[7] == 0 and (pages[:, 584 * p:] == 0).all(), "the pad byte and the page padding are 0"
    scales = npfp8.ue8m0_decode(scale_codes[:7])
    nope = npfp8.e4m3_decode(data[:448]).reshape(7, 64) * scales[:, None]
    rope = npfp8.bf16_decode(data[448:].copy().view("<u2"))
    back = npfp8.unpack_model1_pages(pages, p)  # [3, 5, 512]
    np.testing.assert_array_equal(back[1, t], np.concatenate([nope.reshape(-1), rope]))
    tile_max = np.abs(kv[..., :448].reshape(3, p, 7, 64)).max(-1, keepdims=True)
    err = np.abs(back[..., :448] - kv[..., :448]).reshape(3, p, 7, 64)
    assert np.all(err <= tile_max * 2.0 ** -4 + 2.0 ** -13 * 2.0 ** -10)  # e4m3's half step, or the floor's subnormal
    np.testing.assert_allclose(back[..., 448:], kv[..., 448:], rtol=2.0 ** -8)


def test_model1_torch_matches_numpy_byte_for_byte():
    rng = np.random.default_rng(8)
    kv = _model1_kv(rng, n=4, p=7)
    want = npfp8.pack_model1_pages(kv)
    packed = kfp8.pack_model1_kvcache(torch.from_numpy(kv)[:, :, None])
    page_bytes = npfp8.model1_page_bytes(7)
    # FlashMLA's tensor: [num_blocks, P, 1, 584], pages page_bytes apart
    assert packed.shape == (4, 7, 1, 584) and packed.stride() == (page_bytes, 584, 584, 1)
    got = packed.as_strided((4, page_bytes), (page_bytes, 1)).numpy()
    assert np.array_equal(got, want)
    back = kfp8.unpack_model1_kvcache(packed)[:, :, 0].double().numpy()
    np.testing.assert_allclose(back, npfp8.unpack_model1_pages(want, 7), rtol=2.0 ** -24)


def test_ue8m0_holds_powers_of_two_only():
    assert list(npfp8.ue8m0_encode([2.0 ** -13, 1.0, 2.0 ** 127])) == [114, 127, 254]
    assert npfp8.ue8m0_encode([float("nan")])[0] == 255 and np.isnan(npfp8.ue8m0_decode([255])[0])
    with pytest.raises(ValueError, match="powers of two"):
        npfp8.ue8m0_encode([3.0])
