"""mistake: unstable softmax
message: Your softmax overflows: scores here reach ~1e3 and exp(1e3) is inf. Subtract each
  row's maximum before exponentiating.
reason: not_finite
match: non-finite rows
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_lat = np.einsum("hd,hcd->hc", q_nope, w_uk)
    e = np.exp((q_lat @ c_kv.T + q_rope @ k_rope.T) * scale)    # slip
    return np.einsum("hc,hcd->hd", (e / e.sum(1, keepdims=True)) @ c_kv, w_uv)
