"""expect: pass
slip: none -- one head at a time, absorbed: w_uk[h] @ q_nope[h] scores the latents directly.
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    n_heads = q_nope.shape[0]
    out = np.empty((n_heads, w_uv.shape[-1]))
    for h in range(n_heads):
        q_lat = w_uk[h] @ q_nope[h]                           # [d_latent]
        s = scale * (c_kv @ q_lat + k_rope @ q_rope[h])       # [T]
        p = np.exp(s - s.max())
        p /= p.sum()
        out[h] = (p @ c_kv) @ w_uv[h]                         # weight latents, then W_UV
    return out
