"""expect: pass
slip: none -- per query token, picks out the valid entries with np.flatnonzero (wherever they sit, first slot included) and writes them back in place.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos, dtype=np.int64)
    table = np.asarray(block_table, dtype=np.int64)
    P = int(page_block_size)
    out = np.full(pos.shape, -1, dtype=np.int64)
    for i, j in np.ndindex(*pos.shape[:2]):
        where = np.flatnonzero(pos[i, j] != -1)
        if where.size == 0:
            continue
        t = pos[i, j, where]
        out[i, j, where] = table[i, t // P] * P + t % P
    return out
