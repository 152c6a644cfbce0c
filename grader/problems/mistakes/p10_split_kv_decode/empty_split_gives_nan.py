"""mistake: empty split gives NaN
message: An empty split produced NaN (0 / 0); a split with no keys must give o_part 0 and
  lse_part -inf, i.e. weight 0.
reason: not_finite
"""
import math

import numpy as np


def _part(q, rows, d_v, scale):
    s = scale * (q @ rows.T)                                 # [h_q, n], n may be 0
    m = np.max(s, axis=1, initial=-np.inf)                   # -inf for an empty split
    e = np.exp(s - m[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        return e @ rows[:, :d_v] / e.sum(axis=1)[:, None], m + np.log(e.sum(axis=1))   # slip: 0/0


def split_kv_decode(q, kv, d_v, scale, n_splits):
    c = math.ceil(kv.shape[0] / n_splits)
    parts = [_part(q, kv[j * c:(j + 1) * c], d_v, scale) for j in range(n_splits)]
    o_parts = np.stack([o for o, _ in parts])                # [n_splits, h_q, d_v]
    lse_parts = np.stack([l for _, l in parts])              # [n_splits, h_q]
    lse = np.logaddexp.reduce(lse_parts, axis=0)
    with np.errstate(invalid="ignore"):
        out = np.einsum("sh,shd->hd", np.exp(lse_parts - lse), o_parts)
    return out, lse, o_parts, lse_parts
