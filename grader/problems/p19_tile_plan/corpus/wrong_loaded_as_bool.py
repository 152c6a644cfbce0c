"""expect: fail
slip: returns only whether each tile is loaded (a bool grid), not whether it needs the mask.
reason: wrong_type
"""
import numpy as np


def tile_plan(n_q, n_k, block_m, block_n, causal=True):
    n_blocks, n_tiles = -(-n_q // block_m), -(-n_k // block_n)
    loaded = np.zeros((n_blocks, n_tiles), dtype=bool)
    for b in range(n_blocks):
        last = min((b + 1) * block_m, n_q) - 1
        hi = n_k if not causal else min(max(n_k - n_q + 1 + last, 0), n_k)
        loaded[b, :-(-hi // block_n)] = True
    return loaded
