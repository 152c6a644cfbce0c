"""Problem 16 - sparse_indices: model answer."""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos, dtype=np.int64)               # [b, s_q, topk]
    table = np.asarray(block_table, dtype=np.int64)          # [b, max_blocks]
    p = int(page_block_size)
    valid = pos >= 0                                         # -1 = empty slot
    t = np.where(valid, pos, 0)                              # read page 0 for -1, then discard it
    seq = np.arange(pos.shape[0])[:, None, None]             # [b, 1, 1]: each sequence its own table row
    page = table[seq, t // p]                                # [b, s_q, topk] page ids
    return np.where(valid, page * p + t % p, -1)             # physical rows, -1 kept
