"""expect: fail
slip: caches the merge weights keyed by the shape of lses, as if every call merged the same parts.
"""
import numpy as np

_weights = {}


def lse_merge(outs, lses):
    if lses.shape not in _weights:
        top = np.max(lses, axis=0)
        top = np.where(np.isneginf(top), 0.0, top)
        e = np.exp(lses - top)
        s = e.sum(axis=0)
        with np.errstate(divide="ignore"):
            lse = np.where(s > 0, top + np.log(np.where(s > 0, s, 1)), -np.inf)
        _weights[lses.shape] = (e / np.where(s > 0, s, 1), lse)
    w, lse = _weights[lses.shape]
    return np.sum(w[..., None] * outs, axis=0), lse
