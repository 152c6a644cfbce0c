"""FlashMLA's FP8 KV-cache layouts, in plain numpy (no ml_dtypes, so it also runs in a browser).

Two layouts, both from FlashMLA's tests/quant.py and flash_mla_interface.py:

**V3.2** (DeepSeek-V3.2, d_qk = 576): one token = one 656-byte row
  bytes   0..511  the 512 latent values as float8 e4m3 (e4m3fn: no inf, max 448)
  bytes 512..527  four float32 scales, little-endian; scale k multiplies values 128k..128k+127
  bytes 528..655  the 64 rope values as bfloat16, little-endian

**MODEL1** (FlashMLA's `MODEL1_FP8Sparse`, d_qk = 512 = 448 nope + 64 rope, d_v = 512):
584 bytes per token, but not as one row. A page of P tokens is
  bytes 0 .. 576*P - 1            token t at 576*t: 448 e4m3 codes, then 64 bf16 rope values
  bytes 576*P .. 584*P - 1        token t at 576*P + 8*t: 7 UE8M0 scales (one per 64 codes)
                                  and one unused byte (written 0 here)
and FlashMLA's packer pads each page to a multiple of 576 bytes (model1_page_bytes).

Each tile of values is stored as round_e4m3(x / scale). The scale rule (`scales=`):
  "pow2" (the default, FlashMLA's since its MODEL1 release): the power of two at or above
         max|x| / 448 (UE8M0-style, rounded up), with max|x| / 448 first raised to 1e-4 as
         FlashMLA's _cast_scale_inv_to_ue8m0 does -- so the smallest scale is 2^-13 and a
         tile below about 2.7e-4 loses precision to e4m3's subnormals. A power-of-two scale
         makes code * scale exact in bf16, so a kernel that dequantizes to bf16 rounds nothing.
  "amax" (FlashMLA's September 2025 V3.2 release): max|x| / 448 as a float32 (1.0 for an
         all-zero tile). code * scale is then generally not a bf16 value, and a kernel that
         dequantizes to bf16 before its MMA rounds it (kernels/reference.py, mode "gpu").
UE8M0 holds powers of two only, so MODEL1 takes "pow2" only."""
from __future__ import annotations

import numpy as np

E4M3_MAX = 448.0
TILE = 128  # V3.2: latent values per float32 scale
SCALE_RULES = ("pow2", "amax")
DEFAULT_SCALES = "pow2"
# FlashMLA's _cast_scale_inv_to_ue8m0 computes 2 ** ceil(log2(max(max|x| / 448, 1e-4))):
# the floor 1e-4 rounds up to 2^-13, the smallest scale it makes
POW2_SCALE_FLOOR = 2.0 ** -13

# MODEL1_FP8Sparse (FlashMLA tests/quant.py: FP8KVCacheLayout.MODEL1_FP8Sparse.get_meta())
MODEL1_NOPE, MODEL1_ROPE, MODEL1_TILE = 448, 64, 64
MODEL1_TILES = MODEL1_NOPE // MODEL1_TILE  # 7 UE8M0 scales per token
MODEL1_DATA_BYTES = MODEL1_NOPE + 2 * MODEL1_ROPE  # 576: codes + bf16 rope, the token's first part
MODEL1_SCALE_BYTES = MODEL1_TILES + 1  # 8: seven scales and a pad byte
MODEL1_TOKEN_BYTES = MODEL1_DATA_BYTES + MODEL1_SCALE_BYTES  # 584
MODEL1_PAGE_ALIGN = 576  # FlashMLA's packer pads a page to a multiple of this many bytes


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
    """float values -> uint8 e4m3fn codes, round to nearest (ties to even code), saturate at 448;
    NaN -> 0x7F (NaN)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.minimum(np.abs(x), E4M3_MAX)
    hi = np.clip(np.searchsorted(_POS, a, side="left"), 1, len(_POS) - 1)
    lo = hi - 1
    d_lo, d_hi = a - _POS[lo], _POS[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    code = np.where(pick_hi, hi, lo).astype(np.uint8)
    code = np.where(a == 0, 0, code).astype(np.uint8)
    code = np.where(np.signbit(x) & (code != 0), code | 0x80, code)
    return np.where(np.isnan(x), 0x7F, code).astype(np.uint8)


def bf16_encode(x) -> np.ndarray:
    """float values -> uint16 bfloat16 bits, round to nearest even."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def bf16_decode(bits) -> np.ndarray:
    """uint16 bfloat16 bits -> float32 values."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def ue8m0_encode(scales) -> np.ndarray:
    """Powers of two 2^e (float) -> uint8 UE8M0 codes e + 127; NaN -> 255 (UE8M0's NaN).
    Anything else is a ValueError: UE8M0 holds nothing but powers of two."""
    s = np.asarray(scales, dtype=np.float64)
    nan = np.isnan(s)
    m, e = np.frexp(np.where(nan, 1.0, s))  # s = m * 2^e, m = 0.5 exactly for a power of two
    if not np.all((m == 0.5) & (e - 1 >= -127) & (e - 1 <= 127)):
        raise ValueError("UE8M0 scales must be powers of two 2^-127 .. 2^127")
    return np.where(nan, 255, e - 1 + 127).astype(np.uint8)


def ue8m0_decode(codes) -> np.ndarray:
    """uint8 UE8M0 codes -> float64 2^(code - 127); code 255 is NaN."""
    c = np.asarray(codes, dtype=np.uint8).astype(np.int64)
    return np.where(c == 255, np.nan, np.ldexp(1.0, c - 127))


def tile_scales(amax, scales: str = DEFAULT_SCALES) -> np.ndarray:
    """The scale of each tile from its max|x| (float, any shape) -> float32, same shape.

    "pow2": the smallest power of two p >= 2^-13 with 448 * p >= max|x| -- exactly FlashMLA's
    2 ** ceil(log2(max(max|x| / 448, 1e-4))), computed without rounding. "amax": max|x| / 448
    as float32, 1.0 for an all-zero tile. A NaN max (a poisoned tile) gives a NaN scale, so
    that a kernel that reads the tile gets NaN whatever its codes are."""
    if scales not in SCALE_RULES:
        raise ValueError(f"scales must be one of {SCALE_RULES}, got {scales!r}")
    a = np.asarray(amax, dtype=np.float64)
    if scales == "amax":
        return np.where(np.isnan(a), np.nan, np.where(a > 0, a / E4M3_MAX, 1.0)).astype(np.float32)
    _, e = np.frexp(np.maximum(a, POW2_SCALE_FLOOR * E4M3_MAX) / E4M3_MAX)  # a/448 < 2^e: 2^e is a candidate
    p = np.ldexp(1.0, e)
    p = np.where(E4M3_MAX * p / 2 >= a, p / 2, p)  # the division may have rounded up past a power of two
    p = np.where(E4M3_MAX * p < a, p * 2, p)
    return np.where(np.isnan(a), np.nan, np.maximum(p, POW2_SCALE_FLOOR)).astype(np.float32)


def quantize_tiles(x, tile: int, scales: str = DEFAULT_SCALES):
    """x [..., n*tile] float -> (uint8 e4m3 codes [..., n*tile], float32 scales [..., n])."""
    x = np.asarray(x, dtype=np.float64)
    width = x.shape[-1]
    if width % tile:
        raise ValueError(f"width must be a multiple of {tile}, got {width}")
    tiles = x.reshape(x.shape[:-1] + (width // tile, tile))
    s = tile_scales(np.abs(tiles).max(axis=-1), scales)  # [..., n]
    codes = e4m3_encode(tiles / s[..., None].astype(np.float64)).reshape(x.shape)
    return codes, s


def pack_fp8_row(latent, rope, scales: str = DEFAULT_SCALES) -> np.ndarray:
    """V3.2: latent [..., 512], rope [..., 64] -> uint8 [..., 656] (scales: "pow2" or "amax")."""
    latent = np.asarray(latent, dtype=np.float64)
    rope = np.asarray(rope, dtype=np.float64)
    if latent.shape[-1] % TILE:
        raise ValueError(f"latent width must be a multiple of {TILE}, got {latent.shape[-1]}")
    codes, s = quantize_tiles(latent, TILE, scales)
    scale_bytes = s.astype("<f4").view(np.uint8).reshape(latent.shape[:-1] + (-1,))
    rope_bytes = bf16_encode(rope).astype("<u2").view(np.uint8).reshape(rope.shape[:-1] + (-1,))
    return np.concatenate([codes, scale_bytes, rope_bytes], axis=-1)


def unpack_fp8_row(row, d_latent: int = 512, d_rope: int = 64) -> np.ndarray:
    """V3.2: uint8 [..., 656] -> float64 [..., 576] = [dequantized latent, rope] (either scale rule)."""
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


# ---------------------------------------------------------------------------------------
# MODEL1_FP8Sparse: 448 e4m3 + 64 bf16 per token, the page's UE8M0 scales after its tokens
# ---------------------------------------------------------------------------------------

def model1_page_bytes(page_block_size: int) -> int:
    """Bytes of one MODEL1 page of P tokens as FlashMLA's packer lays it out: 584 * P rounded
    up to a multiple of 576 (the page stride; the tokens' bytes are the first 584 * P)."""
    if page_block_size < 1:
        raise ValueError(f"page_block_size must be >= 1, got {page_block_size}")
    return -(-page_block_size * MODEL1_TOKEN_BYTES // MODEL1_PAGE_ALIGN) * MODEL1_PAGE_ALIGN


def pack_model1_pages(kv) -> np.ndarray:
    """kv [num_blocks, P, 512] float (448 nope, then 64 rope) -> uint8 [num_blocks, model1_page_bytes(P)].
    Power-of-two scales (UE8M0 holds nothing else); the pad byte and the page's padding are 0."""
    kv = np.asarray(kv, dtype=np.float64)
    if kv.ndim != 3 or kv.shape[-1] != MODEL1_NOPE + MODEL1_ROPE:
        raise ValueError(f"kv must be [num_blocks, page_block_size, {MODEL1_NOPE + MODEL1_ROPE}], got {kv.shape}")
    n, p, _ = kv.shape
    codes, s = quantize_tiles(kv[..., :MODEL1_NOPE], MODEL1_TILE, "pow2")  # [n, P, 448], [n, P, 7]
    rope = bf16_encode(kv[..., MODEL1_NOPE:]).astype("<u2").view(np.uint8).reshape(n, p, 2 * MODEL1_ROPE)
    scale_codes = np.zeros((n, p, MODEL1_SCALE_BYTES), dtype=np.uint8)
    scale_codes[..., :MODEL1_TILES] = ue8m0_encode(s)
    out = np.zeros((n, model1_page_bytes(p)), dtype=np.uint8)
    out[:, :p * MODEL1_DATA_BYTES] = np.concatenate([codes, rope], axis=-1).reshape(n, -1)
    out[:, p * MODEL1_DATA_BYTES:p * MODEL1_TOKEN_BYTES] = scale_codes.reshape(n, -1)
    return out


def unpack_model1_pages(pages, page_block_size: int) -> np.ndarray:
    """uint8 [num_blocks, >= 584 * P] -> float64 [num_blocks, P, 512] = [dequantized nope, rope]."""
    pages = np.ascontiguousarray(np.asarray(pages, dtype=np.uint8))
    p = page_block_size
    if pages.ndim != 2 or pages.shape[1] < p * MODEL1_TOKEN_BYTES:
        raise ValueError(f"pages must be uint8 [num_blocks, >= {p * MODEL1_TOKEN_BYTES}] for pages of {p} tokens, "
                         f"got {pages.shape}")
    n = pages.shape[0]
    data = pages[:, :p * MODEL1_DATA_BYTES].reshape(n, p, MODEL1_DATA_BYTES)
    scale_codes = pages[:, p * MODEL1_DATA_BYTES:p * MODEL1_TOKEN_BYTES].reshape(n, p, MODEL1_SCALE_BYTES)
    scales = ue8m0_decode(scale_codes[..., :MODEL1_TILES])  # [n, P, 7]
    nope = e4m3_decode(data[..., :MODEL1_NOPE]).reshape(n, p, MODEL1_TILES, MODEL1_TILE) * scales[..., None]
    rope = bf16_decode(data[..., MODEL1_NOPE:].copy().view("<u2")).astype(np.float64)  # [n, P, 64]
    return np.concatenate([nope.reshape(n, p, MODEL1_NOPE), rope], axis=-1)
