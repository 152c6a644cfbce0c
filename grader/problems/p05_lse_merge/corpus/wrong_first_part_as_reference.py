"""expect: fail
slip: subtracts the first part's lse (its own reference point, finite wherever the first part saw a key) instead of each row's largest lse.
"""
import numpy as np


def lse_merge(outs, lses):
    ref = np.where(np.isfinite(lses[0]), lses[0], np.max(lses, axis=0))   # [H, S]
    ref = np.where(np.isfinite(ref), ref, 0.0)
    w = np.exp(lses - ref)                                                  # [P, H, S]
    total = w.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(total[..., None] > 0, (w[..., None] * outs).sum(axis=0) / total[..., None], 0.0)
        lse = ref + np.log(total)
    return out, lse
