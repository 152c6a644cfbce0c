"""expect: fail
slip: builds the answer in a float array (np.full with -1.0), so the positions come back as floats.
reason: wrong_type
"""
import numpy as np


def lightning_indexer(q_idx, weights, k_idx, topk):
    s_q, s_k = q_idx.shape[0], k_idx.shape[0]
    scores = np.einsum("th,ths->ts", weights, np.maximum(np.einsum("thd,sd->ths", q_idx, k_idx), 0))
    out = np.full((s_q, topk), -1.0)
    for t in range(s_q):
        n = s_k - s_q + 1 + t
        pick = np.lexsort((np.arange(n), -scores[t, :n]))[:topk]
        out[t, :len(pick)] = pick
    return out
