"""expect: pass
slip: none -- loops over every (head, query) row with that row's own maximum.
"""
import math

import numpy as np


def lse_merge(outs, lses):
    n_parts, H, S, D = outs.shape
    out = np.zeros((H, S, D))
    lse = np.full((H, S), -np.inf)
    for h in range(H):
        for s in range(S):
            row = [float(x) for x in lses[:, h, s]]
            m = max(row)
            if m == -math.inf:
                continue
            weights = [math.exp(x - m) for x in row]
            total = sum(weights)
            for p in range(n_parts):
                if weights[p]:
                    out[h, s] += weights[p] / total * outs[p, h, s]
            lse[h, s] = m + math.log(total)
    return out, lse
