"""expect: pass
slip: none -- caches the split boundaries keyed by (T, n_splits), all they depend on.
"""
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=None)
def _bounds(T, n_splits):
    c = -(-T // n_splits)
    return tuple((min(j * c, T), min(j * c + c, T)) for j in range(n_splits))


def split_kv_decode(q, kv, d_v, scale, n_splits):
    h = q.shape[0]
    o_parts = np.zeros((n_splits, h, d_v))
    lse_parts = np.full((n_splits, h), -np.inf)
    for j, (lo, hi) in enumerate(_bounds(kv.shape[0], n_splits)):
        if hi == lo:
            continue
        s = scale * q @ kv[lo:hi].T
        m = s.max(1)
        e = np.exp(s - m[:, None])
        o_parts[j] = e @ kv[lo:hi, :d_v] / e.sum(1)[:, None]
        lse_parts[j] = m + np.log(e.sum(1))
    top = lse_parts.max(0)
    w = np.exp(lse_parts - top)
    lse = top + np.log(w.sum(0))
    out = (w[..., None] * o_parts).sum(0) / w.sum(0)[:, None]
    return out, lse, o_parts, lse_parts
