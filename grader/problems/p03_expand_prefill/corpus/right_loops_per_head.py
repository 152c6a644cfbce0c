"""expect: pass
slip: none -- loops over heads and query tokens; each query's softmax covers keys 0..s only.
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    T, H, _ = q_nope.shape
    d_v = w_uv.shape[-1]
    out = np.zeros((T, H, d_v))
    for h in range(H):
        k = c_kv @ w_uk[h]                          # [T, d_nope] keys of head h
        v = c_kv @ w_uv[h]                          # [T, d_v]
        for s in range(T):
            sc = (k[: s + 1] @ q_nope[s, h] + k_rope[: s + 1] @ q_rope[s, h]) * scale  # [s+1]
            w = np.exp(sc - sc.max())
            out[s, h] = (w / w.sum()) @ v[: s + 1]
    return out
