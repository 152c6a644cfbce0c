"""Problem 17 - sparse_decode: top-k sparse decode over 656-byte FP8 rows; -1 ignored, no key → lse -inf.

Chapter: notebooks/08_flashmla_next.ipynb
Check your answer: python practice/judge.py 17     (hints: python practice/judge.py 17 --hint)
The whole statement: python practice/judge.py 17 --statement
"""
import numpy as np


def sparse_decode(q, kv_cache, indices, softmax_scale):
    """Absorbed MLA decode over the rows each query token's indexer chose.

    q             [b, s_q, h_q, 576] float64: 512 latent dims, then 64 rope dims
    kv_cache      [num_blocks, page_block_size, 1, 656] uint8 FP8 rows (problem 11's format);
                  row r = kv_cache[r // page_block_size, r % page_block_size, 0]; rows that no
                  entry names are poisoned (they decode to NaN)
    indices       [b, s_q, topk] integers: physical rows, -1 = no key (a row listed twice
                  counts twice)
    softmax_scale float

    Returns (out [b, s_q, h_q, 512], lse [b, h_q, s_q]), natural-log lse; a query token whose
    entries are all -1 gets out 0 and lse -inf. Keep each row's softmax stable. Do not change
    the inputs.
    """
    # TODO(problem 17): per query token, drop the -1 entries, decode the rows, attend stably.
    raise NotImplementedError("problem 17 (sparse_decode) is not written yet")
