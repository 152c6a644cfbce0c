"""expect: fail
slip: caches the chosen positions by the shapes and topk, so a second step of the same shapes reuses the first one's choice.
"""
import numpy as np

_memo = {}


def lightning_indexer(q_idx, weights, k_idx, topk):
    key = (q_idx.shape, k_idx.shape, topk)
    if key in _memo:
        return _memo[key]
    s_q, s_k = q_idx.shape[0], k_idx.shape[0]
    scores = np.einsum("th,ths->ts", weights, np.maximum(np.einsum("thd,sd->ths", q_idx, k_idx), 0))
    out = np.full((s_q, topk), -1, dtype=np.int64)
    for t in range(s_q):
        n = s_k - s_q + 1 + t
        pick = np.lexsort((np.arange(n), -scores[t, :n]))[:topk]
        out[t, :len(pick)] = pick
    _memo[key] = out
    return out
