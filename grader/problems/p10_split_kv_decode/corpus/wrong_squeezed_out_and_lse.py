"""expect: fail
slip: returns np.squeeze(out) and np.squeeze(lse), which drops the head axis when there is one head.
"""
import numpy as np


def _softmax_part(q, rows, d_v, scale):
    n_heads = q.shape[0]
    if len(rows) == 0:
        return np.zeros((n_heads, d_v)), np.full(n_heads, -np.inf)
    s = scale * q @ rows.T
    m = np.max(s, axis=1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(axis=1)
    return (p @ rows[:, :d_v]) / l[:, None], m[:, 0] + np.log(l)


def split_kv_decode(q, kv, d_v, scale, n_splits):
    T = len(kv)
    c = -(-T // n_splits)
    parts = [_softmax_part(q, kv[j * c:(j + 1) * c], d_v, scale) for j in range(n_splits)]
    o_parts = np.array([p[0] for p in parts])
    lse_parts = np.array([p[1] for p in parts])
    lse = np.logaddexp.reduce(lse_parts, axis=0)
    out = np.sum(np.exp(lse_parts - lse)[:, :, None] * o_parts, axis=0)
    return np.squeeze(out), np.squeeze(lse), o_parts, lse_parts
