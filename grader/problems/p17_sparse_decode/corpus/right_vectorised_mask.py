"""expect: pass
slip: none -- gathers a fixed-size list per token, -1 entries replaced by row 0 AND zeroed before use, scores masked to -inf, empty rows guarded.
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
    flat = kv_cache.reshape(-1, 656)
    idx = np.asarray(indices, dtype=np.int64)
    valid = idx != -1                                               # [b, s_q, topk]
    k = decode_rows(flat[np.where(valid, idx, 0).reshape(-1)]).reshape(*idx.shape, 576)
    k = np.where(valid[..., None], k, 0.0)                          # row 0 may be poison: zero it
    s = softmax_scale * np.einsum("bshd,bskd->bshk", q, k)          # [b, s_q, h_q, topk]
    s = np.where(valid[:, :, None, :], s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    total = e.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lse = np.where(total > 0, m[..., 0] + np.log(total), -np.inf)
        out = np.einsum("bshk,bskd->bshd", e, k[..., :512]) / np.where(total > 0, total, 1.0)[..., None]
    return out, np.transpose(lse, (0, 2, 1))
