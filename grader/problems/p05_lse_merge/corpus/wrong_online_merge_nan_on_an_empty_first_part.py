"""expect: fail
slip: merges the parts one by one with a running max that starts at -inf; rows no part saw are handled first, but a row whose FIRST part is empty computes exp(-inf - -inf) = NaN.
"""
import numpy as np


def lse_merge(outs, lses):
    n_parts = lses.shape[0]
    none_seen = np.isneginf(lses).all(axis=0)                       # [H, S]
    m = np.full(lses.shape[1:], -np.inf)
    l = np.zeros(lses.shape[1:])
    acc = np.zeros(outs.shape[1:])
    for i in range(n_parts):
        m_new = np.maximum(m, lses[i])
        old = np.exp(m - m_new)
        new = np.exp(lses[i] - m_new)
        l = l * old + new
        acc = acc * old[..., None] + new[..., None] * outs[i]
        m = m_new
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(none_seen[..., None], 0.0, acc / l[..., None])
        lse = np.where(none_seen, -np.inf, m + np.log(l))
    return out, lse
