"""expect: pass
slip: none -- one split at a time (empty ones give o_part 0, lse_part -inf), then a logaddexp combine.
"""
import math

import numpy as np


def split_kv_decode(q, kv, d_v, scale, n_splits):
    h_q = q.shape[0]
    c = math.ceil(kv.shape[0] / n_splits)
    o_parts = np.zeros((n_splits, h_q, d_v))
    lse_parts = np.full((n_splits, h_q), -np.inf)
    for j in range(n_splits):
        rows = kv[j * c:(j + 1) * c]                         # [n_j, d_k], maybe empty
        if len(rows) == 0:
            continue                                         # o_part 0, lse_part -inf
        s = scale * q @ rows.T                               # [h_q, n_j]
        m = s.max(axis=1, keepdims=True)
        p = np.exp(s - m)
        o_parts[j] = p @ rows[:, :d_v] / p.sum(axis=1, keepdims=True)
        lse_parts[j] = m[:, 0] + np.log(p.sum(axis=1))
    lse = np.logaddexp.reduce(lse_parts, axis=0)             # [h_q], finite since T >= 1
    out = np.einsum("sh,shd->hd", np.exp(lse_parts - lse), o_parts)
    return out, lse, o_parts, lse_parts
