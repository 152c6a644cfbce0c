"""mistake: w_uk and w_uv swapped
message: You up-projected keys with w_uv and values with w_uk; keys use w_uk, values use
  w_uv.
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    T = c_kv.shape[0]
    k = np.einsum("tc,hcd->htd", c_kv, w_uv)                # slip
    v = np.einsum("tc,hcd->htd", c_kv, w_uk)                # slip
    s = (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, k_rope)) * scale
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hst,htd->shd", p / p.sum(-1, keepdims=True), v)
