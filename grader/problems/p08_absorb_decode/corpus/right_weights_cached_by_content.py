"""expect: pass
slip: none -- caches the transposed up-projections keyed by their bytes (a correct memo: same content, same weights).
"""
import hashlib

import numpy as np

_w_uk_t = {}


def _key(a):
    return a.shape, a.dtype.str, hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    k = _key(w_uk)
    if k not in _w_uk_t:
        _w_uk_t[k] = np.ascontiguousarray(np.swapaxes(w_uk, 1, 2))    # [H, d_nope, d_latent]
    q_lat = np.einsum("hd,hdc->hc", q_nope, _w_uk_t[k])
    s = scale * (q_lat @ c_kv.T + q_rope @ k_rope.T)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return np.einsum("hc,hcd->hd", p @ c_kv, w_uv)
