"""A right answer to problem 10, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
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
    lse = np.logaddexp.reduce(lse_parts, axis=0)
    out = np.einsum("sh,shd->hd", np.exp(lse_parts - lse), o_parts)
    return out, lse, o_parts, lse_parts
