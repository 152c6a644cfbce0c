"""expect: pass
slip: none -- handles n == 0 explicitly, then a list of rows stacked.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P, h_kv, d = kv_cache.shape[1:]
    if n == 0:
        return np.empty((0, h_kv, d))
    rows = []
    page_no = 0
    while len(rows) < n:
        page = kv_cache[int(block_table[seq][page_no])]
        rows.extend(page[: n - len(rows)])
        page_no += 1
    return np.stack(rows)
