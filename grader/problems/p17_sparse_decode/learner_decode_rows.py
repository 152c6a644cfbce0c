"""A right answer with a decode_rows helper, in the style of the named mistakes that are a change to it
(mistakes.diff: '=== name.py from learner_decode_rows.py'); grader/slips.py expands them.
"""
import numpy as np


_c = np.arange(256)                         # every e4m3fn code: sign, 4 exponent bits, 3 mantissa bits
_e, _m = (_c >> 3) & 15, _c & 7
_mag = np.where(_e > 0, (1 + _m / 8) * 2.0 ** (_e - 7), _m / 8 * 2.0 ** -6)
E4M3 = np.where((_c & 0x7F) == 0x7F, np.nan, np.where(_c & 0x80, -_mag, _mag))   # [256] float64


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
