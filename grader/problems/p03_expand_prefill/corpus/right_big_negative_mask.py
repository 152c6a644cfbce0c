"""expect: pass
slip: none -- masks with -1e30 instead of -inf (exp underflows to exactly 0).
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    T = c_kv.shape[0]
    k = np.einsum("tc,hcd->thd", c_kv, w_uk)          # [T, H, d_nope]
    v = np.einsum("tc,hcd->thd", c_kv, w_uv)          # [T, H, d_v]
    s = np.einsum("shd,thd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, k_rope)
    s = s * scale
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    s = np.where(future, -1e30, s)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hst,thd->shd", p, v)
