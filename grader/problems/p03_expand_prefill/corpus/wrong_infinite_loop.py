"""expect: fail
slip: a while loop whose exit condition never becomes true.
reason: timeout
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    T = c_kv.shape[0]
    out = np.zeros((T, q_nope.shape[1], w_uv.shape[-1]))
    s = 0
    while s < T:                                            # slip: s is never incremented
        out[s] = 0.0
    return out
