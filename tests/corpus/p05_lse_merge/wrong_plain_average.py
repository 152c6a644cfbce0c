"""expect: fail
slip: averages the parts' outputs instead of weighting them by exp(lse_i - lse).
mistake: plain average
"""
import numpy as np


def lse_merge(outs, lses):
    return np.mean(outs, axis=0), np.logaddexp.reduce(lses, axis=0)   # slip: plain mean
