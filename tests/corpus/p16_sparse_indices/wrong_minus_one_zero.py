"""expect: fail
slip: clamps -1 to 0 to index safely, and returns 0 there instead of putting -1 back.
mistake: -1 became 0
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos, dtype=np.int64)
    empty = pos == -1
    t = np.where(empty, 0, pos)
    seq = np.arange(pos.shape[0])[:, None, None]
    phys = np.asarray(block_table, dtype=np.int64)[seq, t // page_block_size] * page_block_size + t % page_block_size
    return np.where(empty, 0, phys)
