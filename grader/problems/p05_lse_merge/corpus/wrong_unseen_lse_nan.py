"""expect: fail
slip: out is guarded (0) but the lse of an unseen row comes out NaN.
reason: not_finite
"""
import numpy as np


def lse_merge(outs, lses):
    m = lses.max(axis=0)
    seen = np.isfinite(m)
    safe = np.where(seen, m, 0.0)
    w = np.exp(lses - safe)
    total = w.sum(axis=0)
    out = (w[..., None] * outs).sum(axis=0) / np.where(seen, total, 1.0)[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        lse = m + np.log(total) - np.where(seen, 0.0, m)    # slip: -inf - (-inf) = NaN
    return out, lse
