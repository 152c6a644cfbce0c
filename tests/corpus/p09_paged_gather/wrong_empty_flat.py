"""expect: fail
slip: returns np.zeros(0) (shape [0]) for an empty sequence instead of shape [0, h_kv, d].
reason: wrong_shape
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    if n == 0:
        return np.zeros(0)                                                  # slip
    t = np.arange(n)
    return kv_cache[block_table[seq, t // P], t % P]
