"""expect: fail
slip: folds the scale into q_nope and q_rope in place (q_nope *= scale).
reason: mutated_input
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_nope *= scale                                             # slip: changes the caller's array
    q_rope *= scale
    q_lat = np.einsum("hd,hcd->hc", q_nope, w_uk)
    s = q_lat @ c_kv.T + q_rope @ k_rope.T
    p = np.exp(s - s.max(1, keepdims=True))
    return np.einsum("hc,hcd->hd", (p / p.sum(1, keepdims=True)) @ c_kv, w_uv)
