"""expect: fail
slip: "cleans" the block table in place, replacing unused entries with 0.
reason: mutated_input
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    block_table[block_table == 2**31 - 1] = 0                              # slip: writes the input
    t = np.arange(n)
    return kv_cache[block_table[seq, t // P], t % P]
