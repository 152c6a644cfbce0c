"""expect: fail
slip: hard-codes two parts (outs[0], outs[1]); the number of parts varies.
"""
import numpy as np


def lse_merge(outs, lses):
    lse = np.logaddexp(lses[0], lses[1])                    # slip: only two parts
    ref = np.where(np.isfinite(lse), lse, 0.0)
    out = np.exp(lses[0] - ref)[..., None] * outs[0] + np.exp(lses[1] - ref)[..., None] * outs[1]
    return out, lse
