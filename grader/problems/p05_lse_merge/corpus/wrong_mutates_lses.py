"""expect: fail
slip: replaces -inf in lses in place (lses[...] = ...), changing the caller's array.
reason: mutated_input
"""
import numpy as np


def lse_merge(outs, lses):
    unseen = np.isneginf(lses)
    lses[unseen] = -1e300                                   # slip: writes into the input
    m = lses.max(axis=0)
    w = np.exp(lses - m) * ~unseen
    total = w.sum(axis=0)
    seen = total > 0
    out = (w[..., None] * outs).sum(axis=0) / np.where(seen, total, 1.0)[..., None]
    with np.errstate(divide="ignore"):
        lse = np.where(seen, m + np.log(np.where(seen, total, 1.0)), -np.inf)
    return out, lse
