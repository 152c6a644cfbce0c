"""expect: fail
slip: returns a float32 copy; the rows must come back exactly (it is a copy of float64 data).
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    t = np.arange(n)
    return kv_cache[block_table[seq, t // P], t % P].astype(np.float32)    # slip
