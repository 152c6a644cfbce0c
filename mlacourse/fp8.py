"""FlashMLA's FP8 cache row, in plain numpy (no ml_dtypes, so it also runs in a browser).

One token = 656 bytes:
  bytes   0..511  the 512 latent values as float8 e4m3 (e4m3fn: no inf, max 448)
  bytes 512..527  four float32 scales, little-endian; scale k multiplies values 128k..128k+127
  bytes 528..655  the 64 rope values as bfloat16, little-endian
Each 128-value tile is stored as round_e4m3(x / scale) with scale = max|x| / 448."""
from __future__ import annotations

import numpy as np

E4M3_MAX = 448.0
TILE = 128


def _e4m3_table() -> np.ndarray:
    """float64 value of each of the 256 e4m3fn bit patterns (0x7F/0xFF are NaN)."""
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exp = (codes >> 3) & 0xF
    man = codes & 0x7
    normal = (1 + man / 8.0) * 2.0 ** (exp - 7)
    subnormal = (man / 8.0) * 2.0 ** -6
    vals = sign * np.where(exp == 0, subnormal, normal)
    vals[(exp == 0xF) & (man == 0x7)] = np.nan
    return vals


E4M3_VALUES = _e4m3_table()  # [256]
_POS = E4M3_VALUES[:0x7F]  # codes 0x00..0x7E: the finite non-negative values, ascending


def e4m3_decode(codes) -> np.ndarray:
    """uint8 codes [...] -> float64 values [...]."""
    return E4M3_VALUES[np.asarray(codes, dtype=np.uint8)]


def e4m3_encode(x) -> np.ndarray:
    """float values -> uint8 e4m3fn codes, round to nearest (ties to even code), saturate at 448."""
    x = np.asarray(x, dtype=np.float64)
    a = np.minimum(np.abs(x), E4M3_MAX)
    hi = np.clip(np.searchsorted(_POS, a, side="left"), 1, len(_POS) - 1)
    lo = hi - 1
    d_lo, d_hi = a - _POS[lo], _POS[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    code = np.where(pick_hi, hi, lo).astype(np.uint8)
    code = np.where(a == 0, 0, code).astype(np.uint8)
    return np.where(np.signbit(x) & (code != 0), code | 0x80, code).astype(np.uint8)


def bf16_encode(x) -> np.ndarray:
    """float values -> uint16 bfloat16 bits, round to nearest even."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def bf16_decode(bits) -> np.ndarray:
    """uint16 bfloat16 bits -> float32 values."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def pack_fp8_row(latent, rope) -> np.ndarray:
    """latent [..., 512], rope [..., 64] -> uint8 [..., 656]."""
    latent = np.asarray(latent, dtype=np.float64)
    rope = np.asarray(rope, dtype=np.float64)
    d_latent = latent.shape[-1]
    if d_latent % TILE:
        raise ValueError(f"latent width must be a multiple of {TILE}, got {d_latent}")
    tiles = latent.reshape(latent.shape[:-1] + (d_latent // TILE, TILE))
    amax = np.abs(tiles).max(axis=-1)
    scales = np.where(amax > 0, amax / E4M3_MAX, 1.0).astype(np.float32)  # [..., n_tiles]
    codes = e4m3_encode(tiles / scales[..., None].astype(np.float64)).reshape(latent.shape)
    scale_bytes = scales.astype("<f4").view(np.uint8).reshape(latent.shape[:-1] + (-1,))
    rope_bytes = bf16_encode(rope).astype("<u2").view(np.uint8).reshape(rope.shape[:-1] + (-1,))
    return np.concatenate([codes, scale_bytes, rope_bytes], axis=-1)


def unpack_fp8_row(row, d_latent: int = 512, d_rope: int = 64) -> np.ndarray:
    """uint8 [..., 656] -> float64 [..., 576] = [dequantized latent, rope]."""
    row = np.ascontiguousarray(np.asarray(row, dtype=np.uint8))
    n_tiles = d_latent // TILE
    expect = d_latent + 4 * n_tiles + 2 * d_rope
    if row.shape[-1] != expect:
        raise ValueError(f"row has {row.shape[-1]} bytes, expected {expect}")
    codes = row[..., :d_latent]
    scales = row[..., d_latent:d_latent + 4 * n_tiles].copy().view("<f4").astype(np.float64)
    rope_bits = row[..., d_latent + 4 * n_tiles:].copy().view("<u2")
    vals = e4m3_decode(codes).reshape(row.shape[:-1] + (n_tiles, TILE)) * scales[..., None]
    latent = vals.reshape(row.shape[:-1] + (d_latent,))
    return np.concatenate([latent, bf16_decode(rope_bits).astype(np.float64)], axis=-1)
