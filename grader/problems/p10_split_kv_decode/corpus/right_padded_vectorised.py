"""expect: pass
slip: none -- pads kv to n_splits * c rows, masks the padding with -inf, all splits at once.
"""
import math

import numpy as np


def split_kv_decode(q, kv, d_v, scale, n_splits):
    T, d_k = kv.shape
    c = math.ceil(T / n_splits)
    padded = np.zeros((n_splits * c, d_k))
    padded[:T] = kv
    blocks = padded.reshape(n_splits, c, d_k)                           # [S, c, d_k]
    valid = (np.arange(n_splits * c) < T).reshape(n_splits, 1, c)       # [S, 1, c]
    s = np.where(valid, scale * np.einsum("hd,scd->shc", q, blocks), -np.inf)   # [S, h_q, c]
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)                                 # empty splits
    p = np.exp(s - m)
    tot = p.sum(axis=-1)                                                 # [S, h_q]
    o_parts = (p @ blocks[:, :, :d_v]) / np.where(tot > 0, tot, 1.0)[..., None]
    with np.errstate(divide="ignore"):
        lse_parts = np.where(tot > 0, m[..., 0] + np.log(tot), -np.inf)
    top = lse_parts.max(axis=0)
    w = np.exp(lse_parts - top)                                          # [S, h_q]
    lse = top + np.log(w.sum(axis=0))
    out = (w[..., None] * o_parts).sum(axis=0) / w.sum(axis=0)[:, None]
    return out, lse, o_parts, lse_parts
