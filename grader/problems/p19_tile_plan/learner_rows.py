"""A right answer to problem 19 in another style: the keys each query sees, padded to whole
blocks with the last real query's count, then the fewest and the most per block. The base of
the named mistake about the padding rows (mistakes.diff, 'from learner_rows.py').
"""
import numpy as np


def tile_plan(n_q, n_k, block_m, block_n, causal=True):
    n_blocks = -(-n_q // block_m)
    n_tiles = -(-n_k // block_n)
    if n_blocks == 0:
        return np.zeros((0, n_tiles), dtype=np.int64)
    if causal:
        seen = np.clip(n_k - n_q + 1 + np.arange(n_q), 0, n_k)
    else:
        seen = np.full(n_q, n_k)
    seen = np.pad(seen, (0, n_blocks * block_m - n_q), mode="edge").reshape(n_blocks, block_m)
    lo = seen.min(axis=1)[:, None]
    hi = seen.max(axis=1)[:, None]
    start = np.arange(n_tiles)[None, :] * block_n
    plan = np.where(start < hi, 1, 0)
    plan = np.where(start + block_n <= lo, 2, plan)
    return plan.astype(np.int64)
