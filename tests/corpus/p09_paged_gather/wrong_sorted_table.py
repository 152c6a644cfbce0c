"""expect: fail
slip: sorts the block-table entries, reading the pages in id order instead of sequence order.
mistake: block table sorted
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    ids = sorted(block_table[seq, : -(-n // P)])                            # slip
    pages = [kv_cache[j] for j in ids]
    return np.concatenate(pages, axis=0)[:n] if pages else kv_cache[:0, 0]
