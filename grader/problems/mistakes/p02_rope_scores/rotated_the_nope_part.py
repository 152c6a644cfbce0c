"""mistake: rotated the nope part
message: You rotated q_nope and k_nope as well; only the decoupled d_rope dims carry
  position, which is what lets W_UK be absorbed later.
"""
import numpy as np


def _rot(x, pos, theta):
    d = x.shape[-1]
    ang = np.asarray(pos, dtype=np.float64)[..., None] * theta ** (-np.arange(0, d, 2) / d)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * np.cos(ang) - x[..., 1::2] * np.sin(ang)
    out[..., 1::2] = x[..., 0::2] * np.sin(ang) + x[..., 1::2] * np.cos(ang)
    return out


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    qn = _rot(q_nope, q_pos, theta)                              # slip
    kn = _rot(k_nope, np.asarray(k_pos)[:, None], theta)         # slip
    s = np.einsum("hd,thd->ht", qn, kn) + _rot(q_rope, q_pos, theta) @ _rot(k_rope, k_pos, theta).T
    return s / np.sqrt(q_nope.shape[1] + q_rope.shape[1])
