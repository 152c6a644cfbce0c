"""expect: pass
slip: none -- partials as usual, combined with a running max (the combine kernel's loop).
"""
import math

import numpy as np


def _part(q, rows, d_v, scale):
    if rows.shape[0] == 0:
        return np.zeros((q.shape[0], d_v)), np.full(q.shape[0], -np.inf)
    s = scale * (q @ rows.T)
    m = s.max(1)
    e = np.exp(s - m[:, None])
    return e @ rows[:, :d_v] / e.sum(1)[:, None], m + np.log(e.sum(1))


def split_kv_decode(q, kv, d_v, scale, n_splits):
    c = math.ceil(len(kv) / n_splits)
    parts = [_part(q, kv[j * c:(j + 1) * c], d_v, scale) for j in range(n_splits)]
    m = np.full(q.shape[0], -np.inf)
    l = np.zeros(q.shape[0])
    acc = np.zeros((q.shape[0], d_v))
    for o, x in parts:
        m_new = np.maximum(m, x)
        ref = np.where(np.isfinite(m_new), m_new, 0.0)
        a, b = np.exp(m - ref), np.exp(x - ref)
        l, acc, m = l * a + b, acc * a[:, None] + b[:, None] * o, m_new
    return acc / l[:, None], m + np.log(l), np.stack([o for o, _ in parts]), np.stack([x for _, x in parts])
