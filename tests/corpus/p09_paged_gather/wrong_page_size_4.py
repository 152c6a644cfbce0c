"""expect: fail
slip: hard-codes page_block_size 4 (the visible examples' value) instead of kv_cache.shape[1].
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = 4                                                                   # slip
    t = np.arange(n)
    return kv_cache[block_table[seq, t // P], t % P]
