"""mistake: page id not multiplied by the page size
message: You added the slot to the page id; a page holds P rows, so page n starts at row n *
  P: block_table[i, t // P] * P + t % P.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos, dtype=np.int64)
    valid = pos >= 0
    t = np.where(valid, pos, 0)
    seq = np.arange(pos.shape[0])[:, None, None]
    return np.where(valid, np.asarray(block_table, dtype=np.int64)[seq, t // page_block_size] + t % page_block_size, -1)
