"""A right answer to problem 18, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
"""
import numpy as np


def lightning_indexer(q_idx, weights, k_idx, topk):
    s_q, s_k = q_idx.shape[0], k_idx.shape[0]
    logits = np.einsum("thd,sd->ths", q_idx, k_idx)
    scores = np.einsum("th,ths->ts", weights, np.maximum(logits, 0))
    out = np.full((s_q, topk), -1, dtype=np.int64)
    for t in range(s_q):
        n = s_k - s_q + 1 + t
        order = np.lexsort((np.arange(n), -scores[t, :n]))
        pick = order[:topk]
        out[t, :len(pick)] = pick
    return out
