"""expect: fail
slip: the combine skips empty splits correctly, but their lse_part is written as 0 instead of -inf.
"""
import math

import numpy as np


def _part(q, rows, d_v, scale):
    if rows.shape[0] == 0:
        return np.zeros((q.shape[0], d_v)), np.zeros(q.shape[0])                   # slip: lse 0
    s = scale * (q @ rows.T)
    m = s.max(axis=1)
    e = np.exp(s - m[:, None])
    return e @ rows[:, :d_v] / e.sum(axis=1)[:, None], m + np.log(e.sum(axis=1))


def split_kv_decode(q, kv, d_v, scale, n_splits):
    c = math.ceil(kv.shape[0] / n_splits)
    parts = [_part(q, kv[j * c:(j + 1) * c], d_v, scale) for j in range(n_splits)]
    o_parts = np.stack([o for o, _ in parts])                # [n_splits, h_q, d_v]
    lse_parts = np.stack([l for _, l in parts])              # [n_splits, h_q]
    full = np.array([len(kv[j * c:(j + 1) * c]) > 0 for j in range(n_splits)])
    lse = np.logaddexp.reduce(lse_parts[full], axis=0)      # only the non-empty splits
    out = np.einsum("sh,shd->hd", np.exp(lse_parts[full] - lse), o_parts[full])
    return out, lse, o_parts, lse_parts
