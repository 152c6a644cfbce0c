"""mistake: sequence 0's block table for every sequence
message: Every sequence has its own row of block_table: entry (i, j, k) uses block_table[i,
  ...], not block_table[0, ...].
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.array(topk_pos, dtype=np.int64)
    invalid = pos == -1
    pos[invalid] = 0
    flat = np.asarray(block_table, dtype=np.int64).reshape(-1)
    out = flat[pos // page_block_size] * page_block_size + pos % page_block_size
    out[invalid] = -1
    return out
