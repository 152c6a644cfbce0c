"""expect: fail
slip: forgets to rotate anything -- the scores do not depend on position.
mistake: no relative position
"""
import numpy as np


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    s = np.einsum("hd,thd->ht", q_nope, k_nope) + q_rope @ k_rope.T   # slip: no rot()
    return s / np.sqrt(q_nope.shape[1] + q_rope.shape[1])
