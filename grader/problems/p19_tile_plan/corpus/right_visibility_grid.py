"""expect: pass
slip: none -- the brute force: which key each real query sees, as a [query, key position] grid padded to whole tiles, then each tile asked all() and any().
"""
import numpy as np


def tile_plan(n_q, n_k, block_m, block_n, causal=True):
    n_blocks, n_tiles = -(-n_q // block_m), -(-n_k // block_n)
    pos = np.arange(n_k - n_q, n_k)                          # [n_q] each query's position
    keys = np.arange(n_tiles * block_n)                      # key positions, the last tile's padding too
    sees = (keys[None, :] < n_k) & ((keys[None, :] <= pos[:, None]) if causal else True)
    sees = np.broadcast_to(sees, (n_q, keys.size))
    plan = np.zeros((n_blocks, n_tiles), dtype=np.int64)
    if n_tiles == 0:
        return plan                                          # no keys: rows of nothing
    for b in range(n_blocks):
        rows = sees[b * block_m:(b + 1) * block_m].reshape(-1, n_tiles, block_n)   # real queries only
        plan[b] = np.where(rows.all(axis=(0, 2)), 2, np.where(rows.any(axis=(0, 2)), 1, 0))
    return plan
