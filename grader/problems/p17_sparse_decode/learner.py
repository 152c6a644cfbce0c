"""A right answer to problem 17, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
"""
import numpy as np


_c = np.arange(256)                         # every e4m3fn code: sign, 4 exponent bits, 3 mantissa bits
_e, _m = (_c >> 3) & 15, _c & 7
_mag = np.where(_e > 0, (1 + _m / 8) * 2.0 ** (_e - 7), _m / 8 * 2.0 ** -6)
E4M3 = np.where((_c & 0x7F) == 0x7F, np.nan, np.where(_c & 0x80, -_mag, _mag))   # [256] float64


def sparse_decode(q, kv_cache, indices, softmax_scale):
    b, s_q, h_q, _ = q.shape
    flat = kv_cache.reshape(-1, 656)
    out = np.zeros((b, s_q, h_q, 512))
    lse = np.full((b, h_q, s_q), -np.inf)
    for i in range(b):
        for j in range(s_q):
            row = np.asarray(indices[i, j])
            keys = row[row != -1]
            if keys.size == 0:
                continue
            packed = flat[keys]                               # [n, 656] uint8: the listed rows
            lat = E4M3[packed[:, :512]].reshape(-1, 4, 128) * packed[:, 512:528].copy().view("<f4")[:, :, None]
            rope = (packed[:, 528:].copy().view("<u2").astype(np.uint32) << 16).view(np.float32)
            k = np.concatenate([lat.reshape(-1, 512), rope.astype(np.float64)], axis=1)   # [n, 576]
            s = softmax_scale * q[i, j] @ k.T
            m = s.max(axis=1, keepdims=True)
            row_lse = m[:, 0] + np.log(np.exp(s - m).sum(axis=1))
            p = np.exp(s - row_lse[:, None])
            out[i, j] = p @ k[:, :512]
            lse[i, :, j] = row_lse
    return out, lse
