"""expect: fail
slip: returns a list [out, lse, weights] -- three items where a pair is asked for.
reason: wrong_type
"""
import numpy as np


def lse_merge(outs, lses):
    lse = np.logaddexp.reduce(lses, axis=0)
    w = np.exp(lses - np.where(np.isfinite(lse), lse, 0.0))
    return [np.einsum("phs,phsd->hsd", w, outs), lse, w]    # slip: extra item
