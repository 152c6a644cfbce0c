"""expect: fail
slip: expands one head's keys and values at a time (float32) -- still T x d_nope numbers per head.
reason: memory
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    c = c_kv.astype(np.float32)
    out = np.zeros((q_nope.shape[0], w_uv.shape[-1]))
    for h in range(q_nope.shape[0]):
        k = c @ w_uk[h].astype(np.float32)                           # slip: [T, d_nope] for head h
        s = (k @ q_nope[h].astype(np.float32) + (k_rope @ q_rope[h]).astype(np.float32)) * scale
        del k
        p = np.exp(s - s.max())
        v = c @ w_uv[h].astype(np.float32)                           # slip: [T, d_v]
        out[h] = (p / p.sum()) @ v
        del v
    return out
