"""expect: fail
slip: "cleans" the unused block-table entries of the sequence to 0 in place before reading, changing the caller's table.
reason: mutated_input
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    P = kv_cache.shape[1]
    n = int(cache_seqlens[seq])
    used = -(-n // P)
    block_table[seq, used:] = 0
    t = np.arange(n)
    return kv_cache[block_table[seq, t // P], t % P]
