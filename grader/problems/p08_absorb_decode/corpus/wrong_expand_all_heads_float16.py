"""expect: fail
slip: expands per-head keys and values for every cached token, all heads at once, in float16.
reason: memory
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    c = c_kv.astype(np.float16)
    k = np.matmul(c, w_uk.astype(np.float16))                      # slip: [H, T, d_nope]
    v = np.matmul(c, w_uv.astype(np.float16))                      # slip: [H, T, d_v]
    s = (np.einsum("hd,htd->ht", q_nope.astype(np.float16), k) + (q_rope @ k_rope.T).astype(np.float16)) * scale
    p = np.exp(s - s.max(1, keepdims=True))
    p = p / p.sum(1, keepdims=True)
    return np.einsum("ht,htd->hd", p, v).astype(np.float64)
