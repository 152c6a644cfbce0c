"""expect: pass
slip: none -- uses RoPE's relative form: rot(q, p).rot(k, p') = q.rot(k, p' - p).
"""
import numpy as np


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    d = k_rope.shape[1]
    rel = np.asarray(k_pos, dtype=np.float64) - q_pos                 # [T]
    ang = rel[:, None] * theta ** (-np.arange(0, d, 2) / d)           # [T, d/2]
    c, s = np.cos(ang), np.sin(ang)
    ke, ko = k_rope[:, 0::2], k_rope[:, 1::2]
    k_rel = np.empty_like(k_rope)
    k_rel[:, 0::2] = ke * c - ko * s
    k_rel[:, 1::2] = ke * s + ko * c
    scores = np.einsum("hd,thd->ht", q_nope, k_nope) + q_rope @ k_rel.T
    return scores / np.sqrt(q_nope.shape[1] + d)
