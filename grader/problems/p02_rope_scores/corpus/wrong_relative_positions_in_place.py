"""expect: fail
slip: uses relative positions (the right math) but makes them with k_pos -= q_pos, changing the caller's k_pos.
reason: mutated_input
"""
import numpy as np


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    k_pos -= q_pos                 # only the distance matters: put the query at position 0
    d = k_rope.shape[1]
    ang = k_pos[:, None] * theta ** (-np.arange(0, d, 2) / d)       # [T, d/2]
    c, s = np.cos(ang), np.sin(ang)
    ke, ko = k_rope[:, 0::2], k_rope[:, 1::2]
    k_rot = np.empty_like(k_rope)
    k_rot[:, 0::2] = ke * c - ko * s
    k_rot[:, 1::2] = ke * s + ko * c
    scores = np.einsum("hd,thd->ht", q_nope, k_nope) + q_rope @ k_rot.T
    return scores / np.sqrt(q_nope.shape[1] + d)
