"""mistake: scale 1/sqrt(d_latent + d_rope)
message: You scaled by 1/sqrt(d_latent + d_rope): absorbing W_UK regroups the same dot
  product, so the scale stays the one given (`scale`).
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_lat = np.einsum("hd,hcd->hc", q_nope, w_uk)
    s = (q_lat @ c_kv.T + q_rope @ k_rope.T) / np.sqrt(c_kv.shape[1] + k_rope.shape[1])   # slip
    p = np.exp(s - s.max(1, keepdims=True))
    return np.einsum("hc,hcd->hd", (p / p.sum(1, keepdims=True)) @ c_kv, w_uv)
