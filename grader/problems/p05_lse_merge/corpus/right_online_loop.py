"""expect: pass
slip: none -- folds the parts in one at a time with a running max, like a flash kernel.
"""
import numpy as np


def lse_merge(outs, lses):
    m = np.full(lses.shape[1:], -np.inf)                      # running max  [H, s_q]
    l = np.zeros(lses.shape[1:])                              # sum of exp(lse_i - m)
    acc = np.zeros(outs.shape[1:])                            # sum of exp(lse_i - m) * out_i
    for o, x in zip(outs, lses):
        m_new = np.maximum(m, x)
        safe = np.where(np.isneginf(m_new), 0.0, m_new)
        a, b = np.exp(m - safe), np.exp(x - safe)             # both 0 while nothing is seen
        l = l * a + b
        acc = acc * a[..., None] + b[..., None] * o
        m = m_new
    seen = l > 0
    out = acc / np.where(seen, l, 1.0)[..., None]
    with np.errstate(divide="ignore"):
        lse = np.where(seen, np.where(np.isneginf(m), 0.0, m) + np.log(l), -np.inf)
    return out, lse
