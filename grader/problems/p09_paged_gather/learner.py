"""A right answer to problem 9, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    n = int(cache_seqlens[seq])
    P = kv_cache.shape[1]
    pages = [kv_cache[block_table[seq, j]] for j in range(-(-n // P))]
    return np.concatenate(pages, axis=0)[:n] if pages else kv_cache[:0, 0]
