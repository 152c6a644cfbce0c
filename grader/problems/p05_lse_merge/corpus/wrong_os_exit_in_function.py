"""expect: fail
slip: calls os._exit(0) once the merge "looks done", killing the process before returning.
reason: exit
"""
import os

import numpy as np


def lse_merge(outs, lses):
    lse = np.logaddexp.reduce(lses, axis=0)
    if np.isneginf(lse).any():
        os._exit(0)                                         # slip: bails out on unseen rows
    w = np.exp(lses - lse)
    return np.einsum("phs,phsd->hsd", w, outs), lse
