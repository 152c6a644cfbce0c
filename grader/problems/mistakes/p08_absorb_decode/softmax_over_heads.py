"""mistake: softmax over heads
message: Your softmax normalizes over the heads axis; each head's weights must sum to 1 over
  the T cached tokens (the last axis of the [n_heads, T] scores).
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_lat = np.einsum("hd,hcd->hc", q_nope, w_uk)
    s = (q_lat @ c_kv.T + q_rope @ k_rope.T) * scale
    p = np.exp(s - s.max(0, keepdims=True))                     # slip: axis 0
    return np.einsum("hc,hcd->hd", (p / p.sum(0, keepdims=True)) @ c_kv, w_uv)
