"""expect: fail
slip: caches the folded query (w_uk[h] @ q_nope[h]) keyed by the shapes, as if q_nope and w_uk were the same on every call.
"""
import numpy as np

_q_latent = {}


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    key = (q_nope.shape, w_uk.shape)
    if key not in _q_latent:
        _q_latent[key] = np.einsum("hd,hcd->hc", q_nope, w_uk)      # [H, d_latent]
    q_lat = _q_latent[key]
    s = scale * (q_lat @ c_kv.T + q_rope @ k_rope.T)               # [H, T]
    s -= s.max(axis=1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    return np.einsum("hc,hcd->hd", p @ c_kv, w_uv)
