"""expect: fail
slip: precomputes the rotation of every position 0..4999 for a 4096-wide table "to be fast" -- 640 GB.
reason: memory
"""
import numpy as np


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    d = k_rope.shape[1]
    inv_freq = theta ** (-np.arange(0, d, 2) / d)
    # slip: one [5000, 4096, 4096] table of angles, whatever the sizes asked for
    table = np.empty((5000, 4096, 4096))
    table[:, :, : d // 2] = np.arange(5000)[:, None, None] * inv_freq
    ang = table[np.asarray(k_pos), 0, : d // 2]                      # [T, d/2]
    cos, sin = np.cos(ang), np.sin(ang)
    x1, x2 = k_rope[:, 0::2], k_rope[:, 1::2]
    k_rot = np.empty_like(k_rope)
    k_rot[:, 0::2], k_rot[:, 1::2] = x1 * cos - x2 * sin, x1 * sin + x2 * cos
    s = np.einsum("hd,thd->ht", q_nope, k_nope) + q_rope @ k_rot.T
    return s / np.sqrt(q_nope.shape[1] + d)
