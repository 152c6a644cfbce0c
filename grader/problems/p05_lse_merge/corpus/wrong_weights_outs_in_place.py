"""expect: fail
slip: weights the parts with outs *= ... to save memory, which overwrites the caller's outs.
reason: mutated_input
"""
import numpy as np


def lse_merge(outs, lses):
    top = lses.max(axis=0)
    top[~np.isfinite(top)] = 0.0
    w = np.exp(lses - top)
    total = w.sum(axis=0)
    seen = total > 0
    outs *= (w / np.where(seen, total, 1.0))[..., None]
    lse = np.full(total.shape, -np.inf)
    lse[seen] = top[seen] + np.log(total[seen])
    return outs.sum(axis=0), lse
