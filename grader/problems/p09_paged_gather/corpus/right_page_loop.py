"""expect: pass
slip: none -- loops over the ceil(n / P) pages, concatenates, keeps n rows.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    pages = [kv_cache[block_table[seq, j]] for j in range((n + P - 1) // P)]   # [P, h_kv, d] each
    if not pages:
        return kv_cache[:0, 0]                                              # [0, h_kv, d]
    return np.concatenate(pages, axis=0)[:n]
