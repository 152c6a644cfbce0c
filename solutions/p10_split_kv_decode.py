"""Problem 10 - split_kv_decode: model answer."""
import math

import numpy as np


def _attend_split(q, rows, d_v, scale):
    """One split: q [h, d_k] over rows [n, d_k]. An empty split gives (0, -inf)."""
    h = q.shape[0]
    if rows.shape[0] == 0:
        return np.zeros((h, d_v)), np.full(h, -np.inf)
    s = scale * (q @ rows.T)                          # [h, n]
    m = s.max(axis=1)                                 # [h]
    p = np.exp(s - m[:, None])                        # [h, n]
    total = p.sum(axis=1)                             # [h]
    return (p @ rows[:, :d_v]) / total[:, None], m + np.log(total)


def split_kv_decode(q, kv, d_v, scale, n_splits):
    per_split = math.ceil(kv.shape[0] / n_splits)
    parts = [_attend_split(q, kv[j * per_split:(j + 1) * per_split], d_v, scale)
             for j in range(n_splits)]
    o_parts = np.stack([o for o, _ in parts])         # [n_splits, h, d_v]
    lse_parts = np.stack([l for _, l in parts])       # [n_splits, h]
    lse = np.logaddexp.reduce(lse_parts, axis=0)      # [h]; T >= 1, so finite
    weights = np.exp(lse_parts - lse)                 # [n_splits, h]; empty splits get 0
    out = (weights[..., None] * o_parts).sum(axis=0)  # [h, d_v]
    return out, lse, o_parts, lse_parts
