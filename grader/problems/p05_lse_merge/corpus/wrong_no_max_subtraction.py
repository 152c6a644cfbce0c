"""expect: fail
slip: exp(lse_i) without subtracting the largest lse -- overflows near lse 800 -- and 0/0 for a row no part saw: two slips at once, so no single named mistake is named.
"""
import numpy as np


def lse_merge(outs, lses):
    w = np.exp(lses)                                        # slip
    total = w.sum(axis=0)
    return (w[..., None] * outs).sum(axis=0) / total[..., None], np.log(total)
