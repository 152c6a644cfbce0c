"""expect: fail
slip: masks the future with -inf but pads with -1 only when top-k exceeds s_k, so a new token whose visible past is shorter than top-k lists future positions.
"""
import numpy as np


def lightning_indexer(q_idx, weights, k_idx, topk):
    s_q, s_k = q_idx.shape[0], k_idx.shape[0]
    logits = np.einsum("thd,sd->ths", q_idx, k_idx)
    scores = np.einsum("th,ths->ts", weights, np.maximum(logits, 0.0))
    future = np.arange(s_k)[None, :] > (s_k - s_q + np.arange(s_q))[:, None]
    scores = np.where(future, -np.inf, scores)
    order = np.argsort(-scores, axis=1, kind="stable")
    if topk <= s_k:
        return order[:, :topk].astype(np.int64)
    out = np.full((s_q, topk), -1, dtype=np.int64)
    for t in range(s_q):
        n = s_k - s_q + 1 + t
        out[t, :n] = order[t, :n]
    return out
