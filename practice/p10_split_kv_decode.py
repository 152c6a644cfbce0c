"""Problem 10 - split_kv_decode: flash-decoding in numpy: splits plus an LSE combine.

Chapter: notebooks/06_decode_kernel.ipynb
Check your answer: python practice/judge.py 10     (hints: python practice/judge.py 10 --hint)
The whole statement: python practice/judge.py 10 --statement
"""
import math

import numpy as np


def split_kv_decode(q, kv, d_v, scale, n_splits):
    """Decode attention over the cache cut into n_splits key ranges, combined by lse.

    q  [h_q, d_k]    one token's query heads
    kv [T, d_k]      cached rows shared by all heads; V = kv[:, :d_v]
    d_v int, scale float, n_splits int: split j is rows j*c .. (j+1)*c - 1 (clipped),
    c = ceil(T / n_splits); trailing splits may be empty.

    Returns (out [h_q, d_v], lse [h_q], o_parts [n_splits, h_q, d_v], lse_parts [n_splits, h_q]):
    each split's own attention result, and their combination (equal to one attention over
    all T rows). An empty split has o_parts[j] = 0 and lse_parts[j] = -inf.
    Keep every softmax stable (subtract the max): some scores are in the hundreds.
    """
    # TODO(problem 10): attend to each split (empty ones give 0, -inf), then merge by lse.
    raise NotImplementedError("problem 10 (split_kv_decode) is not written yet")
