"""expect: fail
slip: precomputes every page's first row once per table shape (block_table * P) and reuses it for a new table of the same shape.
"""
import numpy as np

_starts = {}


def sparse_indices(topk_pos, block_table, page_block_size):
    key = (np.shape(block_table), page_block_size)
    if key not in _starts:
        _starts[key] = np.asarray(block_table, dtype=np.int64) * page_block_size
    starts = _starts[key]
    pos = np.asarray(topk_pos, dtype=np.int64)
    valid = pos >= 0
    t = np.where(valid, pos, 0)
    seq = np.arange(pos.shape[0])[:, None, None]
    return np.where(valid, starts[seq, t // page_block_size] + t % page_block_size, -1)
