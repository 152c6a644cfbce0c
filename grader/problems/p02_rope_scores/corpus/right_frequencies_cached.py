"""expect: pass
slip: none -- caches only the inverse frequencies, keyed by (d_rope, theta): everything they depend on.
"""
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=32)
def _inv_freq(d_rope, theta):
    return theta ** (-np.arange(0, d_rope, 2) / d_rope)


def _rot(x, pos, theta):
    f = _inv_freq(x.shape[-1], float(theta))
    a = np.asarray(pos, float)[..., None] * f
    out = np.empty(x.shape)
    out[..., 0::2] = x[..., 0::2] * np.cos(a) - x[..., 1::2] * np.sin(a)
    out[..., 1::2] = x[..., 0::2] * np.sin(a) + x[..., 1::2] * np.cos(a)
    return out


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    s = np.einsum("hd,thd->ht", q_nope, k_nope) + _rot(q_rope, q_pos, theta) @ _rot(k_rope, k_pos, theta).T
    return s / np.sqrt(q_nope.shape[-1] + q_rope.shape[-1])
