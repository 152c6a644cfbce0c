"""expect: fail
slip: one attention over all rows; the "partials" are copies of the total (lse shifted by log n_splits) so that they combine back to it.
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
    out, lse = _part(q, kv, d_v, scale)                      # slip: no splitting at all
    o_parts = np.stack([out] * n_splits)
    lse_parts = np.stack([lse - math.log(n_splits)] * n_splits)
    return out, lse, o_parts, lse_parts
