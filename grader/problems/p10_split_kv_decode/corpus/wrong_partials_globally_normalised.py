"""expect: fail
slip: one softmax over all T rows, then each split sums its share -- o_parts are normalised by the global sum, not the split's own.
"""
import math

import numpy as np


def _part(q, rows, d_v, scale):
    """One split: o_part [h_q, d_v], lse_part [h_q]; an empty split gives (0, -inf)."""
    if rows.shape[0] == 0:
        return np.zeros((q.shape[0], d_v)), np.full(q.shape[0], -np.inf)
    s = scale * (q @ rows.T)                                 # [h_q, n]
    m = s.max(axis=1)
    e = np.exp(s - m[:, None])
    return e @ rows[:, :d_v] / e.sum(axis=1)[:, None], m + np.log(e.sum(axis=1))


def split_kv_decode(q, kv, d_v, scale, n_splits):
    c = math.ceil(kv.shape[0] / n_splits)
    s = scale * (q @ kv.T)                                   # [h_q, T]: one big attention
    m = s.max(axis=1, keepdims=True)
    p = np.exp(s - m)
    p /= p.sum(axis=1, keepdims=True)                        # slip: global normalisation
    o_parts = np.stack([p[:, j * c:(j + 1) * c] @ kv[j * c:(j + 1) * c, :d_v] for j in range(n_splits)])
    lse_parts = np.stack([_part(q, kv[j * c:(j + 1) * c], d_v, scale)[1] for j in range(n_splits)])
    return o_parts.sum(axis=0), np.logaddexp.reduce(lse_parts, axis=0), o_parts, lse_parts
