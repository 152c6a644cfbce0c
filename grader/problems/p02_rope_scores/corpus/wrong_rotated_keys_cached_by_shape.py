"""expect: fail
slip: keeps the rotated rope keys from the previous call when k_rope has the same shape ("the cache doesn't change between steps").
"""
import numpy as np

_rotated_keys = {}


def _rot(x, pos, theta):
    d = x.shape[-1]
    a = np.multiply.outer(np.asarray(pos, float), theta ** (-np.arange(0, d, 2) / d))
    y = np.empty_like(x)
    y[..., ::2] = x[..., ::2] * np.cos(a) - x[..., 1::2] * np.sin(a)
    y[..., 1::2] = x[..., ::2] * np.sin(a) + x[..., 1::2] * np.cos(a)
    return y


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    if k_rope.shape not in _rotated_keys:
        _rotated_keys[k_rope.shape] = _rot(k_rope, k_pos, theta)
    k_r = _rotated_keys[k_rope.shape]
    q_r = _rot(q_rope, q_pos, theta)
    scale = 1 / np.sqrt(q_nope.shape[-1] + q_rope.shape[-1])
    return scale * (np.einsum("hd,thd->ht", q_nope, k_nope) + q_r @ k_r.T)
