"""expect: pass
slip: none -- computes the scores in float32: with whole-number inputs and quarter weights every score and partial sum fits float32's 24 bits, so the ranking is exact (float16 would not be).
"""
import numpy as np


def lightning_indexer(q_idx, weights, k_idx, topk):
    q = np.asarray(q_idx, dtype=np.float32)
    w = np.asarray(weights, dtype=np.float32)
    k = np.asarray(k_idx, dtype=np.float32)
    s_q, s_k = q.shape[0], k.shape[0]
    scores = np.einsum("th,ths->ts", w, np.maximum(np.einsum("thd,sd->ths", q, k), 0))
    out = np.full((s_q, topk), -1, dtype=np.int64)
    for t in range(s_q):
        seen = s_k - s_q + 1 + t
        order = np.argsort(-scores[t, :seen], kind="stable")[:topk]
        out[t, :order.size] = order
    return out
