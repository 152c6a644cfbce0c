"""expect: fail
slip: subtracts the largest score of the whole [H, T, T] array instead of each row's own maximum, so a row far below the top underflows to 0/0.
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    T = c_kv.shape[0]
    k = np.einsum("tc,hcd->htd", c_kv, w_uk)
    v = np.einsum("tc,hcd->htd", c_kv, w_uv)
    s = (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, k_rope)) * scale
    s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
    p = np.exp(s - s.max())               # one max for every head and query
    p /= p.sum(-1, keepdims=True)
    return np.einsum("hst,htd->shd", p, v)
