"""expect: pass
slip: none -- builds each position's block-diagonal rotation matrix and multiplies.
"""
import numpy as np


def _rotation(pos, d, theta):
    r = np.zeros((d, d))
    for i in range(d // 2):
        a = pos * theta ** (-2 * i / d)
        c, s = np.cos(a), np.sin(a)
        r[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[c, -s], [s, c]]
    return r


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    d_rope = q_rope.shape[1]
    rq = q_rope @ _rotation(q_pos, d_rope, theta).T                    # [H, d_rope]
    rk = np.stack([_rotation(p, d_rope, theta) @ k for p, k in zip(k_pos, k_rope)])  # [T, d_rope]
    scores = np.einsum("hd,thd->ht", q_nope, k_nope) + rq @ rk.T
    return scores / np.sqrt(q_nope.shape[1] + d_rope)
