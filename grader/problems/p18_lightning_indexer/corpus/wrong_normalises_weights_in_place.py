"""expect: fail
slip: normalises the head weights in place (weights /= ...) -- it changes the caller's array.
reason: mutated_input
"""
import numpy as np


def lightning_indexer(q_idx, weights, k_idx, topk):
    weights /= np.abs(weights).sum(axis=1, keepdims=True) + 1.0   # a positive rescaling: same order
    s_q, s_k = q_idx.shape[0], k_idx.shape[0]
    scores = np.einsum("th,ths->ts", weights, np.maximum(np.einsum("thd,sd->ths", q_idx, k_idx), 0))
    out = np.full((s_q, topk), -1, dtype=np.int64)
    for t in range(s_q):
        n = s_k - s_q + 1 + t
        pick = np.lexsort((np.arange(n), -scores[t, :n]))[:topk]
        out[t, :len(pick)] = pick
    return out
