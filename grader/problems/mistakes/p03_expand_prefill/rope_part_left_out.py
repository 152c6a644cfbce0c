"""mistake: rope part left out
message: Your scores use only q_nope . k_nope; add q_rope . k_rope (the key's rope part is
  shared by every head).
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    T = c_kv.shape[0]
    k = np.einsum("tc,hcd->htd", c_kv, w_uk)
    v = np.einsum("tc,hcd->htd", c_kv, w_uv)
    s = np.einsum("shd,htd->hst", q_nope, k) * scale        # slip: + rope part missing
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hst,htd->shd", p / p.sum(-1, keepdims=True), v)
