"""mistake: -1 became 0
message: Your empty slots came back as 0 instead of -1. Row 0 is a real row of the cache:
  the kernel would attend to it. Keep -1 wherever topk_pos is -1.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos, dtype=np.int64)
    empty = pos == -1
    t = np.where(empty, 0, pos)
    seq = np.arange(pos.shape[0])[:, None, None]
    phys = np.asarray(block_table, dtype=np.int64)[seq, t // page_block_size] * page_block_size + t % page_block_size
    return np.where(empty, 0, phys)
