"""expect: fail
slip: walks the cached tokens in tiles of 64 (the absorbed path, no expansion) but takes each head's maximum from the first tile and never raises it.
"""
import numpy as np

TILE = 64


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_lat = np.einsum("hd,hcd->hc", q_nope, w_uk)           # [H, d_latent]
    m = None
    l = np.zeros(q_nope.shape[0])
    acc = np.zeros((q_nope.shape[0], c_kv.shape[1]))
    for lo in range(0, c_kv.shape[0], TILE):
        s = (q_lat @ c_kv[lo:lo + TILE].T + q_rope @ k_rope[lo:lo + TILE].T) * scale   # [H, n]
        if m is None:
            m = s.max(axis=1)
        p = np.exp(s - m[:, None])
        l += p.sum(axis=1)
        acc += p @ c_kv[lo:lo + TILE]
    lat = acc / l[:, None]                                  # [H, d_latent]
    return np.einsum("hc,hcv->hv", lat, w_uv)
