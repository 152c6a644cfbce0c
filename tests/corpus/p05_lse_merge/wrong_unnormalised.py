"""expect: fail
slip: weights exp(lse_i - max) are used without dividing by their sum.
mistake: weights not normalised
"""
import numpy as np


def lse_merge(outs, lses):
    m = lses.max(axis=0)
    safe = np.where(np.isfinite(m), m, 0.0)
    w = np.exp(lses - safe)
    lse = np.logaddexp.reduce(lses, axis=0)
    return (w[..., None] * outs).sum(axis=0), lse           # slip: no / w.sum(0)
