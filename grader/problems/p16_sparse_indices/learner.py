"""A right answer to problem 16, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = np.asarray(topk_pos, dtype=np.int64)
    valid = pos >= 0
    t = np.where(valid, pos, 0)
    seq = np.arange(pos.shape[0])[:, None, None]
    return np.where(valid, np.asarray(block_table, dtype=np.int64)[seq, t // page_block_size] * page_block_size + t % page_block_size, -1)
