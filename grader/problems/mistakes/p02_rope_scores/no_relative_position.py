"""mistake: no relative position
message: Your scores do not depend on position: either nothing was rotated or the keys were
  rotated by the query's position; rotate q_rope by q_pos and k_rope[t] by k_pos[t].
"""
import numpy as np


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    s = np.einsum("hd,thd->ht", q_nope, k_nope) + q_rope @ k_rope.T   # slip: no rot()
    return s / np.sqrt(q_nope.shape[1] + q_rope.shape[1])
