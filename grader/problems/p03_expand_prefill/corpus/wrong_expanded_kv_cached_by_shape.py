"""expect: fail
slip: keeps the expanded keys and values between calls, keyed by the shapes of c_kv and the weights, as if the cache never changed.
"""
import numpy as np

_expanded = {}


def _expand(c_kv, w_uk, w_uv):
    key = (c_kv.shape, w_uk.shape, w_uv.shape)
    if key not in _expanded:
        _expanded[key] = (np.einsum("tc,hcd->htd", c_kv, w_uk), np.einsum("tc,hcd->htd", c_kv, w_uv))
    return _expanded[key]


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    k_nope, v = _expand(c_kv, w_uk, w_uv)                                     # [H, T, d]
    s = scale * (np.einsum("shd,htd->hst", q_nope, k_nope) + np.einsum("shr,tr->hst", q_rope, k_rope))
    n = c_kv.shape[0]
    s[:, ~np.tril(np.ones((n, n), dtype=bool))] = -np.inf
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    w = w / w.sum(axis=-1, keepdims=True)
    return np.einsum("hst,htd->shd", w, v)
