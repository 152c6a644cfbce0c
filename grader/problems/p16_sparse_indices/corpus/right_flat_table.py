"""expect: pass
slip: none -- FlashMLA's test helper's way: one gather from the flattened table with a per-sequence offset.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.array(topk_pos, dtype=np.int64)                 # a copy: the input stays as it was
    b, max_blocks = np.shape(block_table)
    invalid = pos == -1
    pos[invalid] = 0
    flat = np.asarray(block_table, dtype=np.int64).reshape(-1)
    offset = (np.arange(b) * max_blocks)[:, None, None]
    pages = flat[pos // page_block_size + offset]
    out = pages * page_block_size + pos % page_block_size
    out[invalid] = -1
    return out.astype(np.int32)
