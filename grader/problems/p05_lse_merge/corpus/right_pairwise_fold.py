"""expect: pass
slip: none -- merges two results at a time with a small merge2 and folds over the parts.
"""
import numpy as np


def _merge2(a, b):
    (oa, la), (ob, lb) = a, b
    lse = np.logaddexp(la, lb)
    seen = np.isfinite(lse)
    ref = np.where(seen, lse, 0.0)
    wa, wb = np.exp(la - ref), np.exp(lb - ref)
    return wa[..., None] * oa + wb[..., None] * ob, lse


def lse_merge(outs, lses):
    acc = (np.zeros(outs.shape[1:]), np.full(lses.shape[1:], -np.inf))
    for o, l in zip(outs, lses):
        acc = _merge2(acc, (o, l))
    return acc
