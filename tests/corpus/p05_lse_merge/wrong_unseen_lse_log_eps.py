"""expect: fail
slip: adds 1e-300 inside the log "to avoid log(0)", so an unseen row's lse is -690.8, not -inf.
"""
import numpy as np


def lse_merge(outs, lses):
    m = lses.max(axis=0)
    safe = np.where(np.isfinite(m), m, 0.0)
    w = np.exp(lses - safe)
    total = w.sum(axis=0)
    out = (w[..., None] * outs).sum(axis=0) / (total[..., None] + 1e-300)
    return out, safe + np.log(total + 1e-300)               # slip: log(1e-300) = -690.8
