"""expect: pass
slip: none -- torch indexing on a zero-copy view; returns a float64 torch tensor.
"""
import torch


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    cache = torch.from_numpy(kv_cache)
    n = int(cache_seqlens[seq])
    P = cache.shape[1]
    t = torch.arange(n)
    pages = torch.as_tensor(block_table[seq, : (n + P - 1) // P].astype("int64"))
    return cache[pages[t // P], t % P]                                     # [n, h_kv, d]
