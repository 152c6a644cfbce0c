"""expect: pass
slip: none -- caches the (page index, slot) arrays by (n, page size), which is all they depend on; the table itself is read every call.
"""
import numpy as np

_idx = {}


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n, P = int(cache_seqlens[seq]), kv_cache.shape[1]
    if (n, P) not in _idx:
        t = np.arange(n)
        _idx[(n, P)] = (t // P, t % P)
    page_of, slot = _idx[(n, P)]
    return kv_cache[block_table[seq][page_of], slot]
