"""A right answer to problem 5, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
"""
import numpy as np


def lse_merge(outs, lses):
    m = lses.max(axis=0)
    safe = np.where(np.isfinite(m), m, 0.0)
    w = np.exp(lses - safe)
    total = w.sum(axis=0)
    out = (w[..., None] * outs).sum(axis=0) / np.where(total > 0, total, 1.0)[..., None]
    return out, np.logaddexp.reduce(lses, axis=0)
