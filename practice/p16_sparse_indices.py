"""Problem 16 - sparse_indices: top-k token positions + a block table to FlashMLA's sparse indices, -1 kept.

Chapter: notebooks/08_flashmla_next.ipynb
Check your answer: python practice/judge.py 16     (hints: python practice/judge.py 16 --hint)
The whole statement: python practice/judge.py 16 --statement
"""
import numpy as np


def sparse_indices(topk_pos, block_table, page_block_size):
    """Logical top-k positions -> physical cache rows, -1 kept.

    topk_pos        [b, s_q, topk] integers: token positions of sequence i chosen for its
                    query token j (0 = its first token); -1 = an empty slot
    block_table     [b, max_blocks] integers: block_table[i, n] holds tokens n*P .. n*P+P-1
                    of sequence i; entries past a sequence's last page are unused (2147483647)
    page_block_size int P >= 1

    Returns an integer array [b, s_q, topk]:
        block_table[i, t // P] * P + t % P    for t = topk_pos[i, j, k] >= 0
        -1                                    where topk_pos[i, j, k] == -1
    Do not change the inputs.
    """
    # TODO(problem 16): look up each position's page in its sequence's row of the table; keep -1.
    raise NotImplementedError("problem 16 (sparse_indices) is not written yet")
