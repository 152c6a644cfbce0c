"""mistake: no rope term
message: Your scores leave out the rotary part q_rope[h] . k_rope[t]; add it to the latent
  part before the softmax.
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_lat = np.einsum("hd,hcd->hc", q_nope, w_uk)
    s = (q_lat @ c_kv.T) * scale                                # slip
    p = np.exp(s - s.max(1, keepdims=True))
    return np.einsum("hc,hcd->hd", (p / p.sum(1, keepdims=True)) @ c_kv, w_uv)
