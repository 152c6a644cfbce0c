"""Problem 5 - lse_merge: merge partial attention results by log-sum-exp.

Chapter: notebooks/04_flops_and_path_choice.ipynb
Check your answer: python practice/judge.py 5      (hints: python practice/judge.py 5 --hint)
The whole statement: python practice/judge.py 5 --statement
"""
import numpy as np


def lse_merge(outs, lses):
    """Combine attention over disjoint key sets into attention over their union.

    outs [n_parts, n_heads, s_q, d_v]   each part's output (0 where it saw no key)
    lses [n_parts, n_heads, s_q]        each part's log-sum-exp (-inf where it saw no key)

    Returns (out [n_heads, s_q, d_v], lse [n_heads, s_q]):
      lse = log(sum_i exp(lses[i])),  out = sum_i exp(lses[i] - lse) * outs[i]
    A row no part saw gives out 0 and lse -inf. lses may be near +-800: stay finite.
    """
    # TODO(problem 5): weights exp(lse_i - m) with m the largest lse, guarded for all -inf rows.
    raise NotImplementedError("problem 5 (lse_merge) is not written yet")
