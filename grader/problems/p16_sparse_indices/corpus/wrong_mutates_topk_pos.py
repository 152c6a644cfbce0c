"""expect: fail
slip: overwrites the -1 entries of topk_pos in place to index safely -- the caller's array is changed.
reason: mutated_input
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    empty = topk_pos == -1
    topk_pos[empty] = 0
    seq = np.arange(topk_pos.shape[0])[:, None, None]
    out = np.asarray(block_table, dtype=np.int64)[seq, topk_pos // page_block_size] * page_block_size \
        + topk_pos % page_block_size
    out[empty] = -1
    return out
