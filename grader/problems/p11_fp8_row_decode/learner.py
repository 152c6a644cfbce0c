"""A right answer to problem 11, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
"""
import numpy as np


def _e4m3(c):
    """uint8 codes -> float64 values."""
    c = c.astype(np.int64)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e, m = (c >> 3) & 0xF, (c & 0x7) / 8
    v = np.where(e == 0, m * 2.0 ** -6, (1 + m) * 2.0 ** (e - 7))
    v = np.where((c & 0x7F) == 0x7F, np.nan, v)
    return sign * v


def fp8_row_decode(rows):
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    n = rows.shape[0]
    scales = rows[:, 512:528].copy().view("<f4")                  # [n, 4]
    latent = _e4m3(rows[:, :512]).reshape(n, 4, 128) * scales[:, :, None]
    rope = (rows[:, 528:].copy().view("<u2").astype(np.uint32) << 16).view(np.float32)
    return np.concatenate([latent.reshape(n, 512), rope.astype(np.float64)], axis=1)
