"""mistake: cache treated as contiguous
message: You read pages 0, 1, 2, ... of kv_cache directly; a sequence's pages are wherever
  its block table points (kv_cache[block_table[seq, j]]).
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    n_pages = -(-n // P)
    return kv_cache[:n_pages].reshape((-1,) + kv_cache.shape[2:])[:n]     # slip: no block table
