"""expect: fail
slip: returns None for an empty sequence instead of a [0, h_kv, d] array.
reason: wrong_type
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    if n == 0:
        return None                                                         # slip
    t = np.arange(n)
    return kv_cache[block_table[seq, t // P], t % P]
