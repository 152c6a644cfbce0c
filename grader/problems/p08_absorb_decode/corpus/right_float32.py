"""expect: pass
slip: none -- the same absorbed math in float32 (the statement allows float32 work).
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    f = np.float32
    q_lat = np.einsum("hd,hcd->hc", q_nope.astype(f), w_uk.astype(f))          # [H, d_latent]
    s = (q_lat @ c_kv.astype(f).T + q_rope.astype(f) @ k_rope.astype(f).T) * f(scale)
    s -= s.max(axis=1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    return np.einsum("hc,hcd->hd", p @ c_kv.astype(f), w_uv.astype(f))        # float32 result
