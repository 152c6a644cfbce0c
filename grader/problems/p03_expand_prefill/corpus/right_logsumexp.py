"""expect: pass
slip: none -- normalises with the row log-sum-exp: p = exp(s - lse).
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    T = c_kv.shape[0]
    k_nope = np.matmul(c_kv, w_uk)                     # [H, T, d_nope]
    v = np.matmul(c_kv, w_uv)                          # [H, T, d_v]
    q = q_nope.transpose(1, 0, 2)                      # [H, T, d_nope]
    s = (q @ k_nope.transpose(0, 2, 1) + q_rope.transpose(1, 0, 2) @ k_rope.T) * scale  # [H, T, T]
    s[:, ~np.tril(np.ones((T, T), dtype=bool))] = -np.inf
    m = s.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True))
    return (np.exp(s - lse) @ v).transpose(1, 0, 2)    # [T, H, d_v]
