"""expect: fail
slip: caches the split boundaries by n_splits alone, though they depend on the number of cached rows too.
"""
import numpy as np

_splits = {}


def _attend(q, rows, d_v, scale):
    if rows.shape[0] == 0:
        return np.zeros((q.shape[0], d_v)), np.full(q.shape[0], -np.inf)
    s = scale * q @ rows.T
    m = s.max(axis=1)
    e = np.exp(s - m[:, None])
    z = e.sum(axis=1)
    return e @ rows[:, :d_v] / z[:, None], m + np.log(z)


def split_kv_decode(q, kv, d_v, scale, n_splits):
    T = kv.shape[0]
    if n_splits not in _splits:
        c = -(-T // n_splits)
        _splits[n_splits] = [(min(j * c, T), min((j + 1) * c, T)) for j in range(n_splits)]
    parts = [_attend(q, kv[lo:hi], d_v, scale) for lo, hi in _splits[n_splits]]
    o_parts = np.stack([o for o, _ in parts])
    lse_parts = np.stack([l for _, l in parts])
    lse = np.logaddexp.reduce(lse_parts, axis=0)
    out = np.einsum("jh,jhd->hd", np.exp(lse_parts - lse), o_parts)
    return out, lse, o_parts, lse_parts
