"""A right answer to problem 8, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_lat = np.einsum("hd,hcd->hc", q_nope, w_uk)
    s = (q_lat @ c_kv.T + q_rope @ k_rope.T) * scale
    p = np.exp(s - s.max(1, keepdims=True))
    return np.einsum("hc,hcd->hd", (p / p.sum(1, keepdims=True)) @ c_kv, w_uv)
