"""expect: fail
slip: rotates q_rope and k_rope in place, so the caller's arrays change.
reason: mutated_input
"""
import numpy as np


def _rot_inplace(x, pos, theta):
    d = x.shape[-1]
    ang = np.asarray(pos, dtype=np.float64)[..., None] * theta ** (-np.arange(0, d, 2) / d)
    even, odd = x[..., 0::2].copy(), x[..., 1::2].copy()
    x[..., 0::2] = even * np.cos(ang) - odd * np.sin(ang)      # slip: writes into the input
    x[..., 1::2] = even * np.sin(ang) + odd * np.cos(ang)
    return x


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    s = np.einsum("hd,thd->ht", q_nope, k_nope) + _rot_inplace(q_rope, q_pos, theta) @ _rot_inplace(k_rope, k_pos, theta).T
    return s / np.sqrt(q_nope.shape[1] + q_rope.shape[1])
