"""mistake: position 0 treated as empty
message: Position 0 (a sequence's first token) is a valid choice; only -1 marks an empty
  slot. Test `topk_pos >= 0` (or `!= -1`), not `> 0` or truthiness.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    out = np.full(np.shape(topk_pos), -1, dtype=np.int64)
    for (i, j, k), t in np.ndenumerate(np.asarray(topk_pos)):
        if t and t != -1:
            out[i, j, k] = int(block_table[i][t // page_block_size]) * page_block_size + int(t) % page_block_size
    return out
