"""expect: pass
slip: none -- heapq.nsmallest over (-score, position) pairs.
"""
import heapq

import numpy as np


def lightning_indexer(q_idx, weights, k_idx, topk):
    s_q = q_idx.shape[0]
    s_k = k_idx.shape[0]
    relu = np.maximum(np.matmul(q_idx, k_idx.T), 0.0)       # [s_q, H, s_k]
    scores = (weights[:, :, None] * relu).sum(axis=1)        # [s_q, s_k]
    rows = []
    for t in range(s_q):
        n = s_k - s_q + 1 + t
        best = [s for _, s in heapq.nsmallest(topk, ((-scores[t, s], s) for s in range(n)))]
        rows.append(best + [-1] * (topk - len(best)))
    return np.array(rows, dtype=np.int64)
