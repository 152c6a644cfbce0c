"""expect: fail
slip: assumes -1 only pads the end of a list and stops at the first -1, losing the valid entries after a hole.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos, dtype=np.int64)
    out = np.full(pos.shape, -1, dtype=np.int64)
    for i in range(pos.shape[0]):
        for j in range(pos.shape[1]):
            for k, t in enumerate(pos[i, j]):
                if t == -1:
                    break
                out[i, j, k] = int(block_table[i, t // page_block_size]) * page_block_size + t % page_block_size
    return out
