"""expect: fail
slip: divides with / and floors, and marks empty slots with np.nan-free -1.0: the indices come back as floats.
reason: wrong_type
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos, dtype=np.float64)
    valid = pos >= 0
    t = np.where(valid, pos, 0.0)
    page_no = np.floor(t / page_block_size).astype(int)
    seq = np.arange(pos.shape[0])[:, None, None]
    page = np.asarray(block_table)[seq, page_no]
    return np.where(valid, page * page_block_size + (t - page_no * page_block_size), -1.0)
