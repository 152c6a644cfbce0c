"""expect: fail
slip: inside each split subtracts the largest score over all heads and rows, not each head's maximum.
"""
import numpy as np


def split_kv_decode(q, kv, d_v, scale, n_splits):
    T, h = kv.shape[0], q.shape[0]
    c = -(-T // n_splits)
    o_parts = np.zeros((n_splits, h, d_v))
    lse_parts = np.full((n_splits, h), -np.inf)
    for j in range(n_splits):
        rows = kv[j * c:(j + 1) * c]
        if len(rows) == 0:
            continue
        s = scale * (q @ rows.T)
        top = s.max()
        e = np.exp(s - top)
        z = e.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            o_parts[j] = (e @ rows[:, :d_v]) / z[:, None]
            lse_parts[j] = top + np.log(z)
    lse = np.logaddexp.reduce(lse_parts, axis=0)
    with np.errstate(invalid="ignore"):
        out = (np.exp(lse_parts - lse)[..., None] * o_parts).sum(axis=0)
    return out, lse, o_parts, lse_parts
