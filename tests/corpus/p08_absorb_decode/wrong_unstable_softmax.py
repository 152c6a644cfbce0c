"""expect: fail
slip: exp of the raw scores without subtracting the row max (overflows at scores ~1e3).
mistake: unstable softmax
reason: not_finite
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_lat = np.einsum("hd,hcd->hc", q_nope, w_uk)
    e = np.exp((q_lat @ c_kv.T + q_rope @ k_rope.T) * scale)    # slip
    return np.einsum("hc,hcd->hd", (e / e.sum(1, keepdims=True)) @ c_kv, w_uv)
