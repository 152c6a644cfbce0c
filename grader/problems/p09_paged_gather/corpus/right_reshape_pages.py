"""expect: pass
slip: none -- fancy-indexes the needed pages at once, flattens pages x slots, trims to n.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    ids = np.asarray(block_table[seq, : -(-n // P)], dtype=np.int64)      # only the pages in use
    pages = kv_cache[ids]                                                 # [n_pages, P, h_kv, d]
    return pages.reshape((-1,) + kv_cache.shape[2:])[:n]
