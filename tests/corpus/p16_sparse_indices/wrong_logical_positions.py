"""expect: fail
slip: thinks the kernel takes the positions the indexer chose, and returns them as they are.
mistake: positions returned unchanged
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    return np.array(topk_pos, dtype=np.int64)
