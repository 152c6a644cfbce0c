"""mistake: whole last page
message: You returned every slot of the last page; only the first cache_seqlens[seq] rows
  are tokens, the rest of the page is unused.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    pages = [kv_cache[block_table[seq, j]] for j in range(-(-n // P))]
    return np.concatenate(pages, axis=0) if pages else kv_cache[:0, 0]     # slip: no [:n]
