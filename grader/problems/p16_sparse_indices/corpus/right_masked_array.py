"""expect: pass
slip: none -- a per-row list comprehension over valid entries only.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    P = page_block_size
    out = []
    for i, seq in enumerate(np.asarray(topk_pos)):
        table = np.asarray(block_table)[i]
        out.append([[-1 if t < 0 else int(table[t // P]) * P + int(t) % P for t in row] for row in seq])
    return np.array(out, dtype=np.int64).reshape(np.shape(topk_pos))
