"""expect: fail
slip: an empty split reports lse_part NaN ("undefined"); the combine uses nan-aware sums so out and lse look right.
reason: not_finite
"""
import math

import numpy as np


def _part(q, rows, d_v, scale):
    if rows.shape[0] == 0:
        return np.zeros((q.shape[0], d_v)), np.full(q.shape[0], np.nan)            # slip: NaN
    s = scale * (q @ rows.T)
    m = s.max(axis=1)
    e = np.exp(s - m[:, None])
    return e @ rows[:, :d_v] / e.sum(axis=1)[:, None], m + np.log(e.sum(axis=1))


def split_kv_decode(q, kv, d_v, scale, n_splits):
    c = math.ceil(kv.shape[0] / n_splits)
    parts = [_part(q, kv[j * c:(j + 1) * c], d_v, scale) for j in range(n_splits)]
    o_parts = np.stack([o for o, _ in parts])                # [n_splits, h_q, d_v]
    lse_parts = np.stack([l for _, l in parts])              # [n_splits, h_q]
    top = np.nanmax(lse_parts, axis=0)
    w = np.nan_to_num(np.exp(lse_parts - top))              # NaN splits weigh 0
    lse = top + np.log(w.sum(axis=0))
    out = np.einsum("sh,shd->hd", w / w.sum(axis=0), o_parts)
    return out, lse, o_parts, lse_parts
