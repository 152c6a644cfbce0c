"""expect: fail
slip: reads n // P pages, dropping a partly filled last page.
mistake: one page too few
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    pages = [kv_cache[block_table[seq, j]] for j in range(n // P)]          # slip: floor
    return np.concatenate(pages, axis=0)[:n] if pages else kv_cache[:0, 0]
