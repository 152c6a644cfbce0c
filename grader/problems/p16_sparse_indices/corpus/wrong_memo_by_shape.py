"""expect: fail
slip: caches the answer by the shapes and the page size, so a second batch of the same shapes gets the first one's rows.
"""
import numpy as np

_seen = {}


def sparse_indices(topk_pos, block_table, page_block_size):
    key = (np.shape(topk_pos), np.shape(block_table), page_block_size)
    if key not in _seen:
        pos = np.asarray(topk_pos, dtype=np.int64)
        valid = pos >= 0
        t = np.where(valid, pos, 0)
        seq = np.arange(pos.shape[0])[:, None, None]
        page = np.asarray(block_table, dtype=np.int64)[seq, t // page_block_size]
        _seen[key] = np.where(valid, page * page_block_size + t % page_block_size, -1)
    return _seen[key]
