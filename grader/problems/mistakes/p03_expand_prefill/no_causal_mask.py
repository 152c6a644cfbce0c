"""mistake: no causal mask
message: Every token attended to the tokens after it; in prefill query t may only see keys
  0..t (a lower-triangular mask).
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    k = np.einsum("tc,hcd->htd", c_kv, w_uk)
    v = np.einsum("tc,hcd->htd", c_kv, w_uv)
    s = (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, k_rope)) * scale
    p = np.exp(s - s.max(-1, keepdims=True))        # slip: no mask before the softmax
    return np.einsum("hst,htd->shd", p / p.sum(-1, keepdims=True), v)
