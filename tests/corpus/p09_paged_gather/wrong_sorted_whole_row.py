"""expect: fail
slip: sorts the whole block-table row (np.sort), so unused entries past the last page mix in with the pages.
mistake: whole block-table row sorted
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    page = kv_cache.shape[1]
    tokens = np.arange(n)
    pages = np.sort(block_table[seq])[tokens // page]          # slip: the whole row, sorted
    return kv_cache[pages, tokens % page]
