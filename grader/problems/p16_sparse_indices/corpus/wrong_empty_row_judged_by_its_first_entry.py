"""expect: fail
slip: decides that a query token has no keys when the first entry of its list is -1 (padding goes at the end, it reasons) and skips the whole row, losing valid entries after a leading -1.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos, dtype=np.int64)
    table = np.asarray(block_table, dtype=np.int64)
    out = np.full(pos.shape, -1, dtype=np.int64)
    for i in range(pos.shape[0]):
        for j in range(pos.shape[1]):
            row = pos[i, j]
            if row[0] == -1:            # an empty list: nothing chosen for this token
                continue
            ok = row >= 0
            t = row[ok]
            out[i, j, ok] = table[i, t // page_block_size] * page_block_size + t % page_block_size
    return out
