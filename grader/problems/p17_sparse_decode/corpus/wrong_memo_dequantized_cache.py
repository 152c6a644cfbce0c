"""expect: fail
slip: dequantizes the whole cache once per cache shape and keeps it, so a new cache of the same shape is read stale.
"""
import numpy as np


def _e4m3():
    c = np.arange(256)
    e, m = (c >> 3) & 15, c & 7
    mag = np.where(e > 0, (1 + m / 8) * 2.0 ** (e - 7), m / 8 * 2.0 ** -6)
    v = np.where(c & 0x80, -mag, mag)
    v[(c & 0x7F) == 0x7F] = np.nan
    return v


E4M3 = _e4m3()


def decode_rows(rows):
    rows = np.ascontiguousarray(rows)
    n = rows.shape[0]
    lat = E4M3[rows[:, :512]].reshape(n, 4, 128) * rows[:, 512:528].copy().view("<f4")[:, :, None]
    rope = (rows[:, 528:].copy().view("<u2").astype(np.uint32) << 16).view(np.float32)
    return np.concatenate([lat.reshape(n, 512), rope.astype(np.float64)], axis=1)


_dequantized = {}


def sparse_decode(q, kv_cache, indices, softmax_scale):
    """Dequantizes the whole cache once per cache shape and reuses it: a new cache of the same
    shape is never decoded."""
    if kv_cache.shape not in _dequantized:
        with np.errstate(invalid="ignore"):
            _dequantized[kv_cache.shape] = decode_rows(kv_cache.reshape(-1, 656))
    k_all = _dequantized[kv_cache.shape]
    b, s_q, h_q, _ = q.shape
    out = np.zeros((b, s_q, h_q, 512))
    lse = np.full((b, h_q, s_q), -np.inf)
    for i in range(b):
        for j in range(s_q):
            row = np.asarray(indices[i, j])
            keys = row[row != -1]
            if keys.size == 0:
                continue
            k = k_all[keys]
            s = softmax_scale * q[i, j] @ k.T
            m = s.max(axis=1, keepdims=True)
            row_lse = m[:, 0] + np.log(np.exp(s - m).sum(axis=1))
            out[i, j] = np.exp(s - row_lse[:, None]) @ k[:, :512]
            lse[i, :, j] = row_lse
    return out, lse
