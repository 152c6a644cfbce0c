"""mistake: -1 sent through the formula
message: Your -1 entries went through the formula: -1 // P is -1, and block_table[i, -1] is
  the table's LAST column, so they became real-looking rows (slot P - 1 of some page). Mask
  them first and return -1 there: the kernel skips only entries equal to -1.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos, dtype=np.int64)
    table = np.asarray(block_table, dtype=np.int64)
    seq = np.arange(pos.shape[0])[:, None, None]
    return table[seq, pos // page_block_size] * page_block_size + pos % page_block_size
