"""mistake: NaN when no part saw a key
message: A row that no part saw (all lse -inf) came out NaN; -inf - (-inf) is NaN, so
  subtract 0 instead of the max there and return out 0, lse -inf.
reason: not_finite
"""
import numpy as np


def lse_merge(outs, lses):
    m = lses.max(axis=0)
    w = np.exp(lses - m)                                    # slip: -inf - (-inf) = NaN
    total = w.sum(axis=0)
    return (w[..., None] * outs).sum(axis=0) / total[..., None], m + np.log(total)
