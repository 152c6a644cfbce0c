"""A right answer to problem 2, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
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
    s = np.einsum("hd,thd->ht", q_nope, k_nope) + _rot(q_rope, q_pos, theta) @ _rot(k_rope, k_pos, theta).T
    return s / np.sqrt(q_nope.shape[1] + q_rope.shape[1])
