"""mistake: decoded as e5m2
message: You decoded the latents as e5m2 (5 exponent bits); FlashMLA stores e4m3fn: 1 sign,
  4 exponent bits (bias 7), 3 mantissa bits.
"""
import numpy as np


def _e4m3(c):
    """uint8 codes -> float64 values."""
    c = c.astype(np.int64)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e, m = (c >> 2) & 0x1F, (c & 0x3) / 4                          # slip: e5m2 fields
    v = np.where(e == 0, m * 2.0 ** -14, (1 + m) * 2.0 ** (e - 15))
    v = np.where(e == 31, np.where(m == 0, np.inf, np.nan), v)
    return sign * v


def fp8_row_decode(rows):
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    n = rows.shape[0]
    scales = rows[:, 512:528].copy().view("<f4")                  # [n, 4]
    latent = _e4m3(rows[:, :512]).reshape(n, 4, 128) * scales[:, :, None]
    rope = (rows[:, 528:].copy().view("<u2").astype(np.uint32) << 16).view(np.float32)
    return np.concatenate([latent.reshape(n, 512), rope.astype(np.float64)], axis=1)
