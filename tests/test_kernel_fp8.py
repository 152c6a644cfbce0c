"""kernels.fp8 (torch) and mlacourse.fp8 (numpy): one FP8 row format, two implementations."""
import numpy as np
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


def test_pack_matches_mlacourse_byte_for_byte():
    rng = np.random.default_rng(0)
    latent, rope = _rows(rng, 64)
    want = npfp8.pack_fp8_row(latent, rope)  # uint8 [64, 656]
    got = kfp8.pack_fp8_rows(torch.from_numpy(latent), torch.from_numpy(rope)).numpy()
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
    want = npfp8.pack_fp8_row(lat, rope)
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
