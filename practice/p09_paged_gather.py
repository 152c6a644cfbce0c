"""Problem 9 - paged_gather: read a sequence through a block table.

Chapter: notebooks/06_decode_kernel.ipynb
Check your answer: python practice/judge.py 9      (hints: python practice/judge.py 9 --hint)
The whole statement: python practice/judge.py 9 --statement
"""
import numpy as np


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    """The valid cached rows of sequence `seq`, in token order.

    kv_cache      [num_blocks, page_block_size, h_kv, d]   shuffled pages; unused slots are NaN
    block_table   [b, max_blocks] int32   page ids of each sequence, in order; entries past
                                          a sequence's last page are unused (2147483647 or
                                          the id of an all-NaN page) -- do not read them
    cache_seqlens [b] int32               valid tokens per sequence
    seq           int

    Returns [cache_seqlens[seq], h_kv, d]. Token t is at
    kv_cache[block_table[seq, t // page_block_size], t % page_block_size].
    """
    # TODO(problem 9): read ceil(n / page_block_size) pages through the block table, keep n rows.
    raise NotImplementedError("problem 9 (paged_gather) is not written yet")
