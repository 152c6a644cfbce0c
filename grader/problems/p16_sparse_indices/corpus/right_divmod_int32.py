"""expect: pass
slip: none -- np.divmod and take_along_axis, kept in int32 as FlashMLA wants.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos).astype(np.int32)
    table = np.asarray(block_table).astype(np.int64)
    b, s_q, topk = pos.shape
    page_no, slot = np.divmod(np.maximum(pos, 0), page_block_size)
    pages = np.take_along_axis(table, page_no.reshape(b, -1), axis=1).reshape(b, s_q, topk)
    phys = (pages * page_block_size + slot).astype(np.int32)
    return np.where(pos == -1, np.int32(-1), phys)
