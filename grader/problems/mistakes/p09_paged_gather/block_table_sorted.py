"""mistake: block table sorted
message: You read the pages in sorted order; the block table lists them in sequence order,
  and page ids are shuffled, so keep block_table[seq] as it is.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    ids = sorted(block_table[seq, : -(-n // P)])                            # slip
    pages = [kv_cache[j] for j in ids]
    return np.concatenate(pages, axis=0)[:n] if pages else kv_cache[:0, 0]
