"""expect: pass
slip: none -- one head at a time with math.fsum-free plain numpy, the -1 entries skipped in a list comprehension.
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


def sparse_decode(q, kv_cache, indices, softmax_scale):
    b, s_q, h_q, _ = q.shape
    n_blocks, page = kv_cache.shape[:2]
    out = np.zeros((b, s_q, h_q, 512))
    lse = np.full((b, h_q, s_q), -np.inf)
    for i in range(b):
        for j in range(s_q):
            rows = [kv_cache[r // page, r % page, 0] for r in indices[i][j] if r != -1]
            if not rows:
                continue
            k = decode_rows(np.stack(rows))
            for h in range(h_q):
                s = softmax_scale * (k @ q[i, j, h])
                top = s.max()
                w = np.exp(s - top)
                lse[i, h, j] = top + np.log(w.sum())
                out[i, j, h] = (w / w.sum()) @ k[:, :512]
    return out, lse
