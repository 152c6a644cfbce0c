"""expect: fail
slip: ignores the scale argument and uses 1/sqrt(d_nope + d_rope) from the shapes.
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    T = c_kv.shape[0]
    my_scale = 1.0 / np.sqrt(q_nope.shape[-1] + q_rope.shape[-1])   # slip: not `scale`
    k = np.einsum("tc,hcd->htd", c_kv, w_uk)
    v = np.einsum("tc,hcd->htd", c_kv, w_uv)
    s = (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, k_rope)) * my_scale
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hst,htd->shd", p / p.sum(-1, keepdims=True), v)
