"""expect: fail
slip: remembers the list of page ids per (block_table shape, seq), as if the table were the same on every call.
"""
import numpy as np

_page_ids = {}


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    key = (block_table.shape, seq)
    if key not in _page_ids:
        _page_ids[key] = [int(b) for b in block_table[seq, : -(-n // P)]]
    ids = _page_ids[key]
    if n == 0:
        return kv_cache[:0, 0].copy()
    return np.concatenate([kv_cache[b] for b in ids], axis=0)[:n]
