"""mistake: linspace split boundaries
message: Your splits have other boundaries: split j is rows j*c .. (j+1)*c - 1 with c =
  ceil(T / n_splits), so only the trailing splits are short or empty.
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
    bounds = np.linspace(0, kv.shape[0], n_splits + 1).round().astype(int)   # slip
    parts = [_part(q, kv[lo:hi], d_v, scale) for lo, hi in zip(bounds[:-1], bounds[1:])]
    o_parts = np.stack([o for o, _ in parts])
    lse_parts = np.stack([l for _, l in parts])
    lse = np.logaddexp.reduce(lse_parts, axis=0)
    out = np.einsum("sh,shd->hd", np.exp(lse_parts - lse), o_parts)
    return out, lse, o_parts, lse_parts
