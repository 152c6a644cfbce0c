"""expect: fail
slip: folds the scale into the queries with *=, which rescales the caller's q_nope and q_rope.
reason: mutated_input
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_nope *= scale
    q_rope *= scale
    k = np.einsum("tc,hcd->htd", c_kv, w_uk)
    v = np.einsum("tc,hcd->htd", c_kv, w_uv)
    s = np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, k_rope)
    T = c_kv.shape[0]
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hst,htd->shd", p / p.sum(-1, keepdims=True), v)
