"""expect: fail
slip: gathers every block-table entry of the sequence (unused ones too) and trims afterwards.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    pages = [kv_cache[j] for j in block_table[seq]]                         # slip: 2147483647 -> IndexError
    return np.concatenate(pages, axis=0)[:n]
