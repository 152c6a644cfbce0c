"""expect: fail
slip: computes in float32 (angles included); the statement asks for float64 within 1e-6.
"""
import numpy as np


def _rot(x, pos, theta):
    d = x.shape[-1]
    ang = (np.asarray(pos, dtype=np.float32)[..., None]
           * np.float32(theta) ** (-np.arange(0, d, 2, dtype=np.float32) / np.float32(d)))
    x = x.astype(np.float32)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * np.cos(ang) - x[..., 1::2] * np.sin(ang)
    out[..., 1::2] = x[..., 0::2] * np.sin(ang) + x[..., 1::2] * np.cos(ang)
    return out


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    s = np.einsum("hd,thd->ht", q_nope.astype(np.float32), k_nope.astype(np.float32))
    s = s + _rot(q_rope, q_pos, theta) @ _rot(k_rope, k_pos, theta).T
    return s / np.float32(np.sqrt(q_nope.shape[1] + q_rope.shape[1]))
