"""mistake: softmax over the query axis
message: You normalised the softmax over queries; each query's weights over its keys (the
  last axis of [H, S, T]) must sum to 1.
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    T = c_kv.shape[0]
    k = np.einsum("tc,hcd->htd", c_kv, w_uk)
    v = np.einsum("tc,hcd->htd", c_kv, w_uv)
    s = (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, k_rope)) * scale
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-2, keepdims=True))                # slip: axis -2
    return np.einsum("hst,htd->shd", p / p.sum(-2, keepdims=True), v)
