"""expect: fail
slip: the guard writes +inf (wrong sign) as the lse of rows no part saw.
"""
import numpy as np


def lse_merge(outs, lses):
    m = lses.max(axis=0)
    seen = np.isfinite(m)
    safe = np.where(seen, m, 0.0)
    w = np.exp(lses - safe)
    total = np.where(seen, w.sum(axis=0), 1.0)
    out = (w[..., None] * outs).sum(axis=0) / total[..., None]
    return out, np.where(seen, safe + np.log(total), np.inf)   # slip: +inf
