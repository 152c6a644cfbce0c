"""expect: fail
slip: applies the formula to every entry, -1 included: -1 // P = -1 reads the table's last column.
mistake: -1 sent through the formula
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos, dtype=np.int64)
    table = np.asarray(block_table, dtype=np.int64)
    seq = np.arange(pos.shape[0])[:, None, None]
    return table[seq, pos // page_block_size] * page_block_size + pos % page_block_size
