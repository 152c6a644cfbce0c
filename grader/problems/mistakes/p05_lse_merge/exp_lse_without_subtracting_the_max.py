"""mistake: exp(lse) without subtracting the max
message: exp(lse) overflows (lse > 709) or underflows (lse < -745) in float64; subtract the
  largest lse before exponentiating.
"""
import numpy as np


def lse_merge(outs, lses):
    lses = np.asarray(lses, dtype=np.float64)              # [n_parts, ...]
    outs = np.asarray(outs, dtype=np.float64)              # [n_parts, ..., d_v]
    w = np.exp(lses)                                       # slip: no shift by the largest lse
    total = w.sum(axis=0)
    seen = total > 0                                       # a row no part saw: out 0, lse -inf
    lse = np.where(seen, np.log(np.where(seen, total, 1.0)), -np.inf)
    w = w / np.where(seen, total, 1.0)                     # the parts' weights, summing to 1
    return (w[..., None] * outs).sum(axis=0), lse
