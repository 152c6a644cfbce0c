"""mistake: scale 1/sqrt(d_nope)
message: You used 1/sqrt(d_nope) as the softmax scale; use the `scale` argument (the score
  runs over d_nope + d_rope dims, so the model's scale is 1/sqrt(d_nope + d_rope)).
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_lat = np.einsum("hd,hcd->hc", q_nope, w_uk)
    s = (q_lat @ c_kv.T + q_rope @ k_rope.T) / np.sqrt(q_nope.shape[1])    # slip
    p = np.exp(s - s.max(1, keepdims=True))
    return np.einsum("hc,hcd->hd", (p / p.sum(1, keepdims=True)) @ c_kv, w_uv)
