"""mistake: slot and page swapped
message: Token t is in page t // page_block_size at slot t % page_block_size; you swapped
  the roles of page and slot.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    n_pages = -(-n // P)
    t = np.arange(n)
    if n == 0:
        return kv_cache[:0, 0]
    return kv_cache[block_table[seq, t % n_pages], t // n_pages]           # slip
