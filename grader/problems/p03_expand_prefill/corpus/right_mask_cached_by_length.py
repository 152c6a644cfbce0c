"""expect: pass
slip: none -- caches the causal mask by T, the only thing it depends on (a correct memo).
"""
import numpy as np

_masks = {}


def _causal(T):
    if T not in _masks:
        _masks[T] = np.tril(np.ones((T, T), dtype=bool))
    return _masks[T]


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    T = c_kv.shape[0]
    k = np.einsum("tc,hcd->htd", c_kv, w_uk)
    v = np.einsum("tc,hcd->htd", c_kv, w_uv)
    s = scale * (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, k_rope))
    s = np.where(_causal(T), s, -np.inf)
    m = s.max(axis=2, keepdims=True)
    p = np.exp(s - m)
    p /= p.sum(axis=2, keepdims=True)
    return np.einsum("hst,htd->shd", p, v)
