"""expect: fail
slip: subtracts the largest score over all heads (s.max()) instead of each head's, so a head whose scores sit far below another's underflows to 0/0.
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_lat = np.einsum("hd,hcd->hc", q_nope, w_uk)
    s = (q_lat @ c_kv.T + q_rope @ k_rope.T) * scale
    e = np.exp(s - s.max())
    p = e / e.sum(axis=-1, keepdims=True)
    return np.einsum("hc,hcd->hd", p @ c_kv, w_uv)
