"""expect: fail
slip: uses -1e30 as "minus infinity" for rows no part saw.
"""
import numpy as np

NEG = -1e30


def lse_merge(outs, lses):
    l = np.where(np.isneginf(lses), NEG, lses)             # slip: a finite stand-in for -inf
    m = l.max(axis=0)
    w = np.exp(l - m) * np.isfinite(lses)                   # empty parts weigh 0
    total = w.sum(axis=0)
    seen = total > 0
    out = (w[..., None] * outs).sum(axis=0) / np.where(seen, total, 1.0)[..., None]
    lse = np.where(seen, m + np.log(np.where(seen, total, 1.0)), NEG)
    return out, lse
