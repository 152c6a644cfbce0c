"""mistake: one maximum shared by several rows
message: You subtracted one maximum shared by several rows (all heads of a token, or the
  whole call); a row whose scores are near -750 while another's are near +750 then
  underflows to 0/0. Subtract each row's own maximum (one head of one query token).
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
    """Two passes: the scores of every query row first, then one shift by their overall max."""
    b, s_q, h_q, _ = q.shape
    flat = kv_cache.reshape(-1, 656)
    scores, keys_of = {}, {}
    for i in range(b):
        for j in range(s_q):
            row = np.asarray(indices[i, j])
            keys = row[row != -1]
            if keys.size:
                keys_of[i, j] = decode_rows(flat[keys])
                scores[i, j] = softmax_scale * q[i, j] @ keys_of[i, j].T
    top = max((s.max() for s in scores.values()), default=0.0)
    out = np.zeros((b, s_q, h_q, 512))
    lse = np.full((b, h_q, s_q), -np.inf)
    for (i, j), s in scores.items():
        with np.errstate(all="ignore"):
            e = np.exp(s - top)
            total = e.sum(axis=1)
            out[i, j] = (e / total[:, None]) @ keys_of[i, j][:, :512]
            lse[i, :, j] = top + np.log(total)
    return out, lse
