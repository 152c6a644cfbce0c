"""expect: pass
slip: none -- plain Python loops with the math module, one head and one split at a time.
"""
import math

import numpy as np


def split_kv_decode(q, kv, d_v, scale, n_splits):
    T = kv.shape[0]
    h_q = q.shape[0]
    c = -(-T // n_splits)
    o_parts = np.zeros((n_splits, h_q, d_v))
    lse_parts = np.full((n_splits, h_q), -math.inf)
    for j in range(n_splits):
        lo, hi = j * c, min((j + 1) * c, T)
        for h in range(h_q):
            scores = [scale * float(np.dot(q[h], kv[t])) for t in range(lo, hi)]
            if not scores:
                continue
            m = max(scores)
            w = [math.exp(x - m) for x in scores]
            o_parts[j, h] = sum(wi * kv[t, :d_v] for wi, t in zip(w, range(lo, hi))) / sum(w)
            lse_parts[j, h] = m + math.log(sum(w))
    out = np.zeros((h_q, d_v))
    lse = np.zeros(h_q)
    for h in range(h_q):
        m = max(lse_parts[:, h])
        tot = sum(math.exp(x - m) for x in lse_parts[:, h])
        lse[h] = m + math.log(tot)
        out[h] = sum(math.exp(lse_parts[j, h] - lse[h]) * o_parts[j, h] for j in range(n_splits))
    return out, lse, o_parts, lse_parts
