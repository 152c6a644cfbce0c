"""expect: fail
slip: hard-codes FlashMLA's page_block_size 64.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = 64                                                                  # slip
    t = np.arange(n)
    return kv_cache[block_table[seq, t // P], t % P]
