"""Problem 18 - lightning_indexer: DeepSeek-V3.2's index scores and top-k, with a stated tie rule.

Chapter: notebooks/08_flashmla_next.ipynb
Check your answer: python practice/judge.py 18     (hints: python practice/judge.py 18 --hint)
The whole statement: python practice/judge.py 18 --statement
"""
import numpy as np


def lightning_indexer(q_idx, weights, k_idx, topk):
    """The top-k positions each new token of one sequence attends to.

    q_idx   [s_q, H, D]  index queries of the s_q new tokens (H heads of width D)
    weights [s_q, H]     each head's weight (may be negative)
    k_idx   [s_k, D]     one index key per token; the new tokens are the last s_q
    topk    int

    Score: I[t, s] = sum_j weights[t, j] * ReLU(q_idx[t, j] . k_idx[s]). New token t sees
    positions 0 .. s_k - s_q + t. Returns an integer array [s_q, topk]: highest score
    first, equal scores by smaller position first, -1 filling rows with too few positions.
    Do not change the inputs.
    """
    # TODO(problem 18): score every visible position, order by (-score, position), keep topk.
    raise NotImplementedError("problem 18 (lightning_indexer) is not written yet")
