"""expect: fail
slip: centres each row on the mean of its parts' finite lses instead of their maximum.
"""
import numpy as np


def lse_merge(outs, lses):
    finite = np.isfinite(lses)
    n = finite.sum(axis=0)                                                  # [H, S]
    centre = np.where(n > 0, np.where(finite, lses, 0.0).sum(axis=0) / np.maximum(n, 1), 0.0)
    w = np.exp(lses - centre)
    total = w.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(total[..., None] > 0, (w[..., None] * outs).sum(axis=0) / total[..., None], 0.0)
        lse = np.where(n > 0, centre + np.log(total), -np.inf)
    return out, lse
