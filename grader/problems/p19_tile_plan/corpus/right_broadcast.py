"""expect: pass
slip: none -- the two bounds of every block at once, and every tile classified by broadcasting [blocks, 1] against [1, tiles].
"""
import numpy as np


def tile_plan(n_q, n_k, block_m, block_n, causal=True):
    n_blocks, n_tiles = -(-n_q // block_m), -(-n_k // block_n)
    first = np.arange(n_blocks) * block_m                    # [blocks] each block's first query
    last = np.minimum(first + block_m, n_q) - 1              # [blocks] its last real query
    if causal:
        lo = np.clip(n_k - n_q + 1 + first, 0, n_k)
        hi = np.clip(n_k - n_q + 1 + last, 0, n_k)
    else:
        lo = hi = np.full(n_blocks, n_k)
    start = np.arange(n_tiles) * block_n                     # [tiles] each tile's first key position
    whole = start[None, :] + block_n <= lo[:, None]          # [blocks, tiles]
    seen = start[None, :] < hi[:, None]
    return np.where(whole, 2, np.where(seen, 1, 0)).astype(np.int64).reshape(n_blocks, n_tiles)
