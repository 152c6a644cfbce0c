"""expect: fail
slip: a "wait until ready" loop at module level that never ends, so the file never finishes importing.
reason: timeout
"""
import numpy as np

ready = False
while not ready:                                               # slip: nothing sets ready
    pass


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    return np.zeros((q_nope.shape[0], q_nope.shape[1], w_uv.shape[-1])), np.zeros((q_nope.shape[1], q_nope.shape[0]))
