"""expect: pass
slip: none -- three nested loops over sequences, query tokens and entries, as a first attempt would.
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    b, s_q, topk = np.shape(topk_pos)
    out = np.full((b, s_q, topk), -1, dtype=np.int64)
    for i in range(b):
        for j in range(s_q):
            for k in range(topk):
                t = int(topk_pos[i][j][k])
                if t == -1:
                    continue
                page = int(block_table[i][t // page_block_size])
                out[i, j, k] = page * page_block_size + t % page_block_size
    return out
