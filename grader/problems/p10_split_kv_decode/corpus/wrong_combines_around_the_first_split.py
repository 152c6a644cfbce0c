"""expect: fail
slip: combines the splits around the FIRST split's lse (never empty) instead of the largest one: a later split whose scores are hundreds higher overflows.
"""
import math

import numpy as np


def split_kv_decode(q, kv, d_v, scale, n_splits):
    h = q.shape[0]
    c = math.ceil(kv.shape[0] / n_splits)
    o_parts = np.zeros((n_splits, h, d_v))
    lse_parts = np.full((n_splits, h), -np.inf)
    for j in range(n_splits):
        rows = kv[j * c:(j + 1) * c]
        if len(rows) == 0:
            continue
        s = scale * q @ rows.T
        m = s.max(axis=1, keepdims=True)
        e = np.exp(s - m)
        o_parts[j] = e @ rows[:, :d_v] / e.sum(axis=1, keepdims=True)
        lse_parts[j] = m[:, 0] + np.log(e.sum(axis=1))
    ref = lse_parts[0]                                   # split 0 always holds rows
    w = np.exp(lse_parts - ref)                          # [n_splits, h]
    total = w.sum(axis=0)
    out = np.einsum("sh,shd->hd", w, o_parts) / total[:, None]
    return out, ref + np.log(total), o_parts, lse_parts
