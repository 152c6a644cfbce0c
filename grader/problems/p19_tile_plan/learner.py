"""A right answer to problem 19, written the way the learners whose slips are catalogued here
write it (the chapter's two bounds, then slices of the row): the base that each named mistake
(mistakes.diff) and each near-copy wrong attempt (corpus/wrong.diff) changes by a few lines.
grader/slips.py expands them.
"""
import numpy as np


def tile_plan(n_q, n_k, block_m, block_n, causal=True):
    n_blocks = (n_q + block_m - 1) // block_m
    n_tiles = (n_k + block_n - 1) // block_n
    plan = np.zeros((n_blocks, n_tiles), dtype=np.int64)
    for b in range(n_blocks):
        m0 = b * block_m
        last = min(m0 + block_m, n_q) - 1
        if causal:
            lo = min(max(n_k - n_q + 1 + m0, 0), n_k)
            hi = min(max(n_k - n_q + 1 + last, 0), n_k)
        else:
            lo = hi = n_k
        whole = lo // block_n
        loaded = (hi + block_n - 1) // block_n
        plan[b, :loaded] = 1
        plan[b, :whole] = 2
    return plan
