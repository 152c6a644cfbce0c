"""expect: fail
slip: hides the future by multiplying the scores with a 0/1 causal mask, so a future position scores 0 and outranks visible positions whose score is negative.
"""
import numpy as np


def lightning_indexer(q_idx, weights, k_idx, topk):
    s_q, s_k = q_idx.shape[0], k_idx.shape[0]
    scores = np.zeros((s_q, s_k))
    for j in range(q_idx.shape[1]):
        scores += weights[:, j:j + 1] * np.maximum(q_idx[:, j] @ k_idx.T, 0.0)
    mask = np.tril(np.ones((s_q, s_k)), k=s_k - s_q)              # 1 where visible
    scores = scores * mask
    out = np.full((s_q, topk), -1, dtype=np.int64)
    for t in range(s_q):
        n = min(topk, s_k - s_q + 1 + t)
        out[t, :n] = np.argsort(-scores[t], kind="stable")[:n]
    return out
