"""expect: fail
slip: always reads row 0 of the block table (sequence 0) and ignores seq for the pages.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    t = np.arange(n)
    return kv_cache[block_table[0, t // P], t % P]                          # slip: 0, not seq
