"""expect: fail
slip: subtracts the max even when it is -inf, so rows no part saw become NaN.
mistake: NaN when no part saw a key
reason: not_finite
"""
import numpy as np


def lse_merge(outs, lses):
    m = lses.max(axis=0)
    w = np.exp(lses - m)                                    # slip: -inf - (-inf) = NaN
    total = w.sum(axis=0)
    return (w[..., None] * outs).sum(axis=0) / total[..., None], m + np.log(total)
