"""expect: fail
slip: computes the index scores in float16 (as the FP8/half kernels do) and ranks those; scores closer than float16's spacing become ties or swap.
"""
import numpy as np


def lightning_indexer(q_idx, weights, k_idx, topk):
    s_q, s_k = q_idx.shape[0], k_idx.shape[0]
    q = q_idx.astype(np.float16)
    k = k_idx.astype(np.float16)
    w = weights.astype(np.float16)
    logits = np.einsum("thd,sd->ths", q, k)                       # float16
    scores = np.einsum("th,ths->ts", w, np.maximum(logits, np.float16(0)))
    out = np.full((s_q, topk), -1, dtype=np.int64)
    for t in range(s_q):
        n = s_k - s_q + 1 + t
        row = scores[t, :n]
        pick = np.lexsort((np.arange(n), -row.astype(np.float64)))[:topk]
        out[t, :len(pick)] = pick
    return out
