"""expect: fail
slip: writes FlashMLA's page size, 64, into the formula instead of using page_block_size.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos, dtype=np.int64)
    valid = pos >= 0
    t = np.where(valid, pos, 0)
    seq = np.arange(pos.shape[0])[:, None, None]
    page_no = np.minimum(t // 64, np.shape(block_table)[1] - 1)
    return np.where(valid, np.asarray(block_table, dtype=np.int64)[seq, page_no] * 64 + t % 64, -1)
