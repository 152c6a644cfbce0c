"""expect: fail
slip: subtracts the single largest lse of the whole array (np.max(lses)) instead of each row's largest, so rows far below it underflow.
"""
import numpy as np


def lse_merge(outs, lses):
    m = np.max(lses[np.isfinite(lses)]) if np.isfinite(lses).any() else 0.0
    w = np.exp(lses - m)                       # [n_parts, H, s_q]
    total = w.sum(axis=0)
    safe = np.where(total > 0, total, 1.0)
    out = (w[..., None] * outs).sum(axis=0) / safe[..., None]
    lse = np.where(total > 0, m + np.log(safe), -np.inf)
    return out, lse
