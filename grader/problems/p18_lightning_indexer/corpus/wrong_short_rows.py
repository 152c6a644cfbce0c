"""expect: fail
slip: returns only as many columns as there are tokens when the sequence is shorter than topk, instead of padding with -1.
reason: wrong_shape
"""
import numpy as np


def lightning_indexer(q_idx, weights, k_idx, topk):
    s_q, s_k = q_idx.shape[0], k_idx.shape[0]
    width = min(topk, s_k - s_q + 1)
    scores = np.einsum("th,ths->ts", weights, np.maximum(np.einsum("thd,sd->ths", q_idx, k_idx), 0))
    out = np.empty((s_q, width), dtype=np.int64)
    for t in range(s_q):
        n = s_k - s_q + 1 + t
        out[t] = np.lexsort((np.arange(n), -scores[t, :n]))[:width]
    return out
