"""expect: fail
slip: short-cuts the one-part case by returning the inputs unchanged, still with their n_parts axis.
"""
import numpy as np


def lse_merge(outs, lses):
    if len(outs) == 1:
        return outs, lses                      # "nothing to merge"
    m = lses.max(axis=0)
    m = np.where(np.isfinite(m), m, 0.0)
    w = np.exp(lses - m)
    total = w.sum(axis=0)
    out = np.einsum("phs,phsd->hsd", w, outs) / np.where(total > 0, total, 1.0)[..., None]
    with np.errstate(divide="ignore"):
        lse = m + np.log(total)
    return out, lse
