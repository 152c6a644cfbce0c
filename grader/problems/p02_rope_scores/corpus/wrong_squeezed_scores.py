"""expect: fail
slip: squeezes the [n_heads, T] scores "to tidy them up", which drops an axis when T = 1 or there is one head.
"""
import numpy as np


def _rotate(x, pos, theta):
    d = x.shape[-1]
    freqs = theta ** (-np.arange(0, d, 2) / d)
    ang = np.asarray(pos, dtype=np.float64)[..., None] * freqs
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    nope = np.einsum("hd,thd->ht", q_nope, k_nope)
    rope = _rotate(q_rope, q_pos, theta) @ _rotate(k_rope, k_pos, theta).T
    scores = (nope + rope) / np.sqrt(q_nope.shape[-1] + q_rope.shape[-1])
    return np.squeeze(scores)
