"""expect: fail
slip: a leftover os._exit(0) at the bottom of the file ends the process while it is imported.
reason: exit
"""
import os

import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    t = np.arange(n)
    return kv_cache[block_table[seq, t // kv_cache.shape[1]], t % kv_cache.shape[1]]


os._exit(0)
