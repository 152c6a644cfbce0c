"""mistake: positions returned unchanged
message: You returned the logical positions. The sparse kernel has no block table: each
  entry must name the physical row, block_table[i, t // P] * P + t % P.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    return np.array(topk_pos, dtype=np.int64)
