"""expect: pass
slip: none -- fills a preallocated [n, h_kv, d] array token by token.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    _, P, h_kv, d = kv_cache.shape
    out = np.empty((n, h_kv, d), dtype=kv_cache.dtype)
    for t in range(n):
        page, slot = divmod(t, P)
        out[t] = kv_cache[block_table[seq, page], slot]
    return out
