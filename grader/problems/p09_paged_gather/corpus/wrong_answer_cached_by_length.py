"""expect: fail
slip: memoises the gathered rows by (seq, its length), so another cache with a sequence of the same length gets stale rows.
"""
import numpy as np

_rows = {}


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    if (seq, n) not in _rows:
        P = kv_cache.shape[1]
        out = np.empty((n,) + kv_cache.shape[2:], kv_cache.dtype)
        for t in range(n):
            out[t] = kv_cache[block_table[seq, t // P], t % P]
        _rows[(seq, n)] = out
    return _rows[(seq, n)]
