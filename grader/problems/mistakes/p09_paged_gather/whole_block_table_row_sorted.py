"""mistake: whole block-table row sorted
message: You sorted the block table row; it lists the pages in sequence order (page ids are
  shuffled), and its unused entries past the sequence's last page are not pages of this
  sequence at all. Keep block_table[seq] as it is.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    page = kv_cache.shape[1]
    tokens = np.arange(n)
    pages = np.sort(block_table[seq])[tokens // page]          # slip: the whole row, sorted
    return kv_cache[pages, tokens % page]
