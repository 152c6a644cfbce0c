"""mistake: splits weighted by their length
message: You weighted splits by how many keys they hold; the weight is the split's softmax
  mass, exp(lse_j - lse), not its size.
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
    parts = [_part(q, kv[j * c:(j + 1) * c], d_v, scale) for j in range(n_splits)]
    o_parts = np.stack([o for o, _ in parts])                # [n_splits, h_q, d_v]
    lse_parts = np.stack([l for _, l in parts])              # [n_splits, h_q]
    sizes = np.array([len(kv[j * c:(j + 1) * c]) for j in range(n_splits)], dtype=float)
    lse = np.logaddexp.reduce(lse_parts, axis=0)
    out = np.tensordot(sizes / sizes.sum(), o_parts, axes=1)  # slip: length, not mass
    return out, lse, o_parts, lse_parts
