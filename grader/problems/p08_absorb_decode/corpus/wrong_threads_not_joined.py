"""expect: fail
slip: one thread per head writes into `out`, but the threads are never joined -- it returns before they finish.
"""
import threading
import time

import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    out = np.zeros((q_nope.shape[0], w_uv.shape[-1]))

    def head(h):
        time.sleep(0.2)                                         # "heavy work"
        s = scale * (c_kv @ (w_uk[h] @ q_nope[h]) + k_rope @ q_rope[h])
        p = np.exp(s - s.max())
        out[h] = (p / p.sum()) @ c_kv @ w_uv[h]

    for h in range(q_nope.shape[0]):
        threading.Thread(target=head, args=(h,)).start()       # slip: no .join()
    return out
