"""expect: pass
slip: none -- np.logaddexp.reduce for the merged lse, weights exp(lse_i - lse) guarded for unseen rows.
"""
import numpy as np


def lse_merge(outs, lses):
    outs, lses = np.asarray(outs, dtype=np.float64), np.asarray(lses, dtype=np.float64)
    lse = np.logaddexp.reduce(lses, axis=0)                  # [H, s_q]; -inf where nothing seen
    seen = np.isfinite(lse)
    w = np.exp(lses - np.where(seen, lse, 0.0))              # unseen rows: exp(-inf) = 0
    out = np.einsum("phs,phsd->hsd", w, outs)
    return out, lse
