"""expect: fail
slip: caches the keys' cos/sin tables by (T, d_rope), but they depend on the positions and theta too.
"""
import numpy as np

_tables = {}


def _cos_sin(pos, d, theta):
    key = (np.shape(pos), d)
    if key not in _tables:
        ang = np.asarray(pos, dtype=np.float64)[..., None] * theta ** (-np.arange(0, d, 2) / d)
        _tables[key] = (np.cos(ang), np.sin(ang))
    return _tables[key]


def _rotate(x, pos, theta):
    c, s = _cos_sin(pos, x.shape[-1], theta)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * c - odd * s
    out[..., 1::2] = even * s + odd * c
    return out


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    q_r = _rotate(q_rope, np.full(q_rope.shape[0], q_pos), theta)
    k_r = _rotate(k_rope, k_pos, theta)
    return (np.einsum("hd,thd->ht", q_nope, k_nope) + q_r @ k_r.T) / np.sqrt(q_nope.shape[1] + q_rope.shape[1])
