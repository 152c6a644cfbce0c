"""mistake: one page too few
message: You read n // page_block_size pages; a partly filled last page counts too, so read
  ceil(n / page_block_size) of them.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    pages = [kv_cache[block_table[seq, j]] for j in range(n // P)]          # slip: floor
    return np.concatenate(pages, axis=0)[:n] if pages else kv_cache[:0, 0]
